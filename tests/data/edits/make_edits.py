#!/usr/bin/env python3
"""Writes the edit-direction test files of tests/data/edits (sg2 generate/interpolate/mix --edit), for a model of
w_dim 512 and num_ws 8 (the bundled digits32), in the formats the editing tools save:

  boundary.npy        InterFaceGAN train_boundary: float32 [1, 512], unit norm
  vec64.npy           a plain float64 [512] direction (sg2 rounds it to float32)
  rows.npy            float32 [8, 512]: one direction per ws row
  ganspace.npz        GANSpace decomposition.py: np.savez_compressed of lat_comp [4, 1, 512] (unit rows), lat_mean,
                      lat_stdev [4], act_comp, act_mean, act_stdev, var_ratio, random_stdevs (all float32)
  ganspace_one.npz    the same with one component, saved with np.savez (stored)
  styleclip.pt        torch.save of a float32 tensor [1, 8, 512] (StyleCLIP / e4e direction tensors)
  ganspace_c2.expect.npy   lat_comp[2] of ganspace.npz, float32 [1, 512] (what --edit-component 2 reads)
  styleclip.expect.npy     the tensor of styleclip.pt as .npy
  bad_int.npy         int32 [1, 512]                      (refused: not float)
  bad_nan.npy         float32 [1, 512] with a NaN          (refused)
  bad_inf.pt          torch.save of a tensor with an inf   (refused)
  bad_shape.npy       float32 [3, 512] (neither 1 nor 8 rows)
  bad_wdim.npy        float32 [1, 100]

Run from anywhere: /usr/bin/python3 tests/data/edits/make_edits.py (numpy and torch, e.g. Debian python3-numpy python3-torch).
"""
import os

import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
rnd = np.random.RandomState(2025)


def unit(a):
    return (a / np.linalg.norm(a, axis=-1, keepdims=True)).astype(np.float32)


def path(name):
    return os.path.join(here, name)


np.save(path('boundary.npy'), unit(rnd.randn(1, 512)))
np.save(path('vec64.npy'), rnd.randn(512) * 0.5)
np.save(path('rows.npy'), (rnd.randn(8, 512) * 0.3).astype(np.float32))
comp = unit(rnd.randn(4, 1, 512))
gs = dict(lat_comp=comp, lat_mean=rnd.randn(1, 512).astype(np.float32),
          lat_stdev=np.array([2.5, 1.75, 1.25, 0.5], np.float32),
          act_comp=rnd.randn(4, 1, 512).astype(np.float32), act_mean=rnd.randn(1, 512).astype(np.float32),
          act_stdev=np.ones(4, np.float32), var_ratio=np.array([.4, .3, .2, .1], np.float32),
          random_stdevs=np.ones(4, np.float32))
np.savez_compressed(path('ganspace.npz'), **gs)
np.savez(path('ganspace_one.npz'), lat_comp=comp[:1], lat_stdev=gs['lat_stdev'][:1], lat_mean=gs['lat_mean'])
np.save(path('ganspace_c2.expect.npy'), comp[2])
clip = (rnd.randn(1, 8, 512) * 0.2).astype(np.float32)
torch.save(torch.from_numpy(clip), path('styleclip.pt'))
np.save(path('styleclip.expect.npy'), clip)
np.save(path('bad_int.npy'), np.arange(512, dtype=np.int32).reshape(1, 512))
nan = unit(rnd.randn(1, 512))
nan[0, 7] = np.nan
np.save(path('bad_nan.npy'), nan)
inf = torch.zeros(1, 512)
inf[0, 3] = float('inf')
torch.save(inf, path('bad_inf.pt'))
np.save(path('bad_shape.npy'), unit(rnd.randn(3, 512)))
np.save(path('bad_wdim.npy'), unit(rnd.randn(1, 100)))
