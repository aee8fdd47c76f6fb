#!/usr/bin/env python3
"""Writes tests/data/checkpoints/users/: small stand-ins of files StyleGAN2 users really have, as public
bug reports describe them (issue 15, "Real files users have"), for tests/test_user_files.cpp. Run by a
developer, not by CI:

    /usr/bin/python3 tests/data/checkpoints/make_user_files.py [NAME ...]

With NAMEs (e.g. tf_init_res16.pkl), only those TensorFlow stand-ins are written, and torch is not
needed. Needs numpy 1.24 (apt-get install python3-numpy), and for the torch.save files Debian's
python3-torch 1.13 (apt-get install python3-torch). It
derives every file from the committed test checkpoints (rosinality16.pt, tf_orig16_gray.pkl), so no
other code is needed; TensorFlow networks are re-pickled through a stand-in
dnnlib.tflib.network.Network, as make_checkpoints.py writes them. What each file is:

projected_w.npz               numpy.savez(w=[1, 6, 8] float32), as NVIDIA's projector writes
                              projected_w.npz (for a model with num_ws 6, w_dim 8: the tests' tiny model).
projected_w_compressed.npz    the same with numpy.savez_compressed (refused: deflate).
two_arrays.npz                numpy.savez(a=[1, 6, 8], b=[2, 8]): several arrays, none called 'w'.
one_array.npz                 numpy.savez(latents=[2, 8]): one array, any name.
tf_epochs16.pkl               tf_orig16_gray.pkl with training-only scalars in G and Gs, as TensorFlow
                              forks keep them: epochs (float32 scalar), epochs_1 (int64 scalar).
tf_layer_scalar16.pkl         tf_orig16_gray.pkl with a scalar inside a layer, 16x16/Conv1/gain: something
                              the network might need, so refused.
tf_extra_tensor16.pkl         tf_orig16_gray.pkl with an unknown [4] tensor in Gs (refused).
tf_rect_const16.pkl           a rectangular fork: 4x4/Const/const of shape [1, C, 4, 2] (no kwarg).
tf_rect_kwarg16.pkl           a rectangular fork: static kwarg resolution_w = 8 (square const).
tf_init_res16.pkl             eps696/stylegan2's rectangular layout: static kwarg init_res = [4, 2] in G,
                              Gs and their components (as its train.py passes it), 4x4/Const/const
                              [1, C, 4, 2] and every noise{i} [1, 1, 2^k * 4, 2^k * 2] (the fork's
                              G_synthesis_stylegan2 shapes; refused: a 16x8 generator).
tf_size16.pkl                 eps696/stylegan2's resized output: static kwargs init_res = [4, 4],
                              size = [16, 24], scale_type = 'pad' (square variables; refused: the fork
                              pads the feature maps to 16x24).
tf_init_res_square16.pkl      the same fork's kwargs that change nothing: init_res = [4, 4], size =
                              [16, 16], scale_type = 'fit' (read as tf_orig16_gray.pkl).
rosinality16_nonoise.pt       rosinality16.pt's g_ema without any noises.* buffer (+ latent_avg).
rosinality16_no_noise3.pt     rosinality16.pt's g_ema without noises.noise_3 only.
g_ema_official_sd.pt          {'G_ema': OrderedDict of official G_ema names}: a state dict, not a network.
g_ema_rosinality_sd.pt        {'G_ema': rosinality16.pt's g_ema, 'latent_avg': ...}: rosinality names
                              under the official key (converted as rosinality).
"""
import collections, io, os, pickle, sys, types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "users")


def tf_stub():
    """A stand-in dnnlib.tflib.network.Network: NEWOBJ + BUILD(state), as the real class pickles."""
    for name in ["dnnlib", "dnnlib.tflib", "dnnlib.tflib.network"]:
        if name not in sys.modules:
            sys.modules[name] = types.ModuleType(name)
    netmod = sys.modules["dnnlib.tflib.network"]

    class Network:
        def __getstate__(self):
            return self._state

        def __setstate__(self, state):
            self._state = state

    Network.__module__ = "dnnlib.tflib.network"
    Network.__qualname__ = "Network"
    netmod.Network = Network
    return Network


class TfUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module == "dnnlib.tflib.network" and name == "Network":
            return sys.modules["dnnlib.tflib.network"].Network
        return super().find_class(module, name)


def load_tf(name):
    tf_stub()
    with open(os.path.join(HERE, name), "rb") as f:
        return TfUnpickler(f).load()


def save_tf(name, nets):
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        pickle.dump(nets, f, protocol=4)
    print(name, os.path.getsize(path), "bytes")


def tf_variants():
    def with_vars(extra_own=(), synth_edit=None, kwargs=None):
        G, D, Gs = load_tf("tf_orig16_gray.pkl")
        for net in (G, Gs):
            net._state["variables"] = list(net._state["variables"]) + list(extra_own)
            if kwargs:
                for n in [net, *net._state["components"].values()]:
                    n._state["static_kwargs"] = dict(n._state["static_kwargs"], **kwargs)
            if synth_edit:
                synth = net._state["components"]["synthesis"]
                synth._state["variables"] = synth_edit(list(synth._state["variables"]))
        return (G, D, Gs)

    files = {
        "tf_epochs16.pkl": lambda: with_vars([("epochs", np.float32(37.0)), ("epochs_1", np.int64(37))]),
        "tf_layer_scalar16.pkl": lambda: with_vars(synth_edit=lambda v: v + [("16x16/Conv1/gain", np.float32(2.0))]),
        "tf_extra_tensor16.pkl": lambda: with_vars([("extra", np.zeros([4], np.float32))]),
    }

    def rect_const(variables):
        out = []
        for name, value in variables:
            if name == "4x4/Const/const":
                value = np.ascontiguousarray(value[:, :, :, :2])
            out.append((name, value))
        return out

    def init_res_4x2(variables):  # the const and every noise variable [..., h, w] -> [..., h, w / 2]
        out = []
        for name, value in variables:
            if name == "4x4/Const/const" or (name.startswith("noise") and name[5:].isdigit()):
                value = np.ascontiguousarray(value[:, :, :, : value.shape[3] // 2])
            out.append((name, value))
        return out

    files.update({
        "tf_rect_const16.pkl": lambda: with_vars(synth_edit=rect_const),
        "tf_rect_kwarg16.pkl": lambda: with_vars(kwargs=dict(resolution_w=8)),
        "tf_init_res16.pkl": lambda: with_vars(synth_edit=init_res_4x2, kwargs=dict(init_res=[4, 2])),
        "tf_size16.pkl": lambda: with_vars(kwargs=dict(init_res=[4, 4], size=[16, 24], scale_type="pad")),
        "tf_init_res_square16.pkl": lambda: with_vars(kwargs=dict(init_res=[4, 4], size=[16, 16], scale_type="fit")),
    })
    return files


def save_torch(name, obj):
    import torch

    path = os.path.join(OUT, name)
    torch.save(obj, path)
    print(name, os.path.getsize(path), "bytes")


def torch_variants():
    import torch

    torch.set_num_threads(1)
    ck = torch.load(os.path.join(HERE, "rosinality16.pt"))
    sd, latent_avg = ck["g_ema"], ck["latent_avg"]
    nonoise = collections.OrderedDict((k, v) for k, v in sd.items() if not k.startswith("noises."))
    save_torch("rosinality16_nonoise.pt", dict(g_ema=nonoise, latent_avg=latent_avg))
    no3 = collections.OrderedDict((k, v) for k, v in sd.items() if k != "noises.noise_3")
    save_torch("rosinality16_no_noise3.pt", dict(g_ema=no3, latent_avg=latent_avg))
    g = torch.Generator().manual_seed(15)
    official = collections.OrderedDict([
        ("synthesis.b4.const", torch.randn(8, 4, 4, generator=g)),
        ("synthesis.b4.resample_filter", torch.full([4, 4], 1 / 16)),
        ("synthesis.b4.conv1.weight", torch.randn(8, 8, 3, 3, generator=g)),
        ("mapping.fc0.weight", torch.randn(8, 8, generator=g)),
        ("mapping.fc0.bias", torch.zeros(8)),
        ("mapping.w_avg", torch.zeros(8)),
    ])
    save_torch("g_ema_official_sd.pt", {"G_ema": official})
    save_torch("g_ema_rosinality_sd.pt", {"G_ema": sd, "latent_avg": latent_avg})


def npz_files():
    rnd = np.random.RandomState(15)
    w = rnd.randn(1, 6, 8).astype(np.float32)
    np.savez(os.path.join(OUT, "projected_w.npz"), w=w)
    np.save(os.path.join(OUT, "projected_w_as.npy"), w)  # the same values as .npy, to compare
    np.savez_compressed(os.path.join(OUT, "projected_w_compressed.npz"), w=w)
    np.savez(os.path.join(OUT, "two_arrays.npz"), a=w, b=rnd.randn(2, 8).astype(np.float32))
    np.savez(os.path.join(OUT, "one_array.npz"), latents=rnd.randn(2, 8).astype(np.float32))
    print("npz files written")


def main():
    os.makedirs(OUT, exist_ok=True)
    tf = tf_variants()
    names = sys.argv[1:]
    unknown = [n for n in names if n not in tf]
    if unknown:
        sys.exit("not a TensorFlow stand-in of this script: " + ", ".join(unknown))
    for name, make in tf.items():
        if not names or name in names:
            save_tf(name, make())
    if not names:
        npz_files()
        torch_variants()


if __name__ == "__main__":
    main()
