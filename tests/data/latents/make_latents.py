#!/usr/bin/env python3
"""Writes tests/data/latents/: latents as torch users save them (issue 23, item 3), and
tests/data/checkpoints/users/ files for items 5 and 7, for tests/test_latents.cpp and
tests/test_user_files.cpp. Run by a developer, not by CI (the files are committed):

    /usr/bin/python3 tests/data/latents/make_latents.py

Needs Debian's python3-torch 1.13 and numpy 1.24 (apt-get install python3-torch python3-numpy). Every
latent is for the tests' tiny model (write_tiny_model: num_ws 6, w_dim 8); values come from fixed
seeds, and each file's expected float32 values are saved beside it as <name>.expect.npy, the array
sg2::read_latents must return (torch's own reading of the file, as float32).

latents/ (what --ws reads):
e4e_latents.pt            torch.save(latents) of a [2, 6, 8] float32 tensor, as e4e / pSp / StyleCLIP
                          save latents.pt (zip format).
e4e_latents_legacy.pt     the same with _use_new_zipfile_serialization=False (legacy format).
e4e_latents_f16.pt        a [2, 6, 8] float16 tensor (read as float32).
projector_w.pt            rosinality projector.py: {image path: {"img", "latent", "noise"}} for two
                          images; latent [8] (W), a row of one [2, 8] tensor that requires grad (views
                          into one storage, as latent_in[i]). Expected: [2, 8].
projector_wplus.pt        the same with --w_plus for one image: latent [6, 8]. Expected: [1, 6, 8].
projector_single.pt       one image's {"img", "latent", "noise"} (forks that save a file per image),
                          latent [6, 8]. Expected: [1, 6, 8].
dict_latents.pt           {"latents": [3, 8], "names": ["a", "b", "c"]} (a dict with a tensor called
                          latents; the list of names is ignored).
dict_one_tensor.pt        {"codes": [2, 6, 8]}: a dict with one tensor, any name.
dict_two_tensors.pt       {"a": [2, 8], "b": [2, 8]}: several tensors, none with a latent name (refused).
int_tensor.pt             an int64 [2, 8] tensor (refused: not float).
strings.pt                {"x": "hello", "y": 3} (refused: no tensor).
list_of_tensors.pt        [tensor [8], tensor [8]] (refused: a list).
numpy_latents.pkl         pickle.dump of a numpy float32 [2, 8] array (protocol 4).
os_system.pkl             a pickle whose value is a call of os.system (written by hand, never loaded).

checkpoints/users/ (what --network reads):
g_ema_module.pt           torch.save(g_ema) of a whole module: a stand-in class model.Generator
                          (torch.nn.Module with Linear / Sequential children), zip format.
g_ema_module_legacy.pt    the same in the legacy format (the class is a ('module', ...) persistent id).
g_ema_module_in_dict.pt   {"g_ema": <that module>, "latent_avg": [16]}.
rosinality16_dataparallel.pt  rosinality16.pt with every g_ema key prefixed 'module.' (a DataParallel
                          model's state dict). Converted as rosinality16.pt, with a note.
rosinality16_module_bare.pt   the bare g_ema state dict of rosinality16.pt with 'module.' keys.
g_ema_official_sd_module.pt   {"G_ema": the official-names state dict of g_ema_official_sd.pt, every key
                          prefixed 'module.'} (refused as a bare official state dict, naming the prefix).
prefixed_unknown.pt       {"generator.fc.weight": [4, 4], "generator.fc.bias": [4]}: a common prefix
                          over keys that are no generator's (refused, naming the prefix).
rosinality16_nan_w_avg.pt rosinality16.pt with latent_avg[3] = NaN (w_avg is read only by truncation).
"""
import collections, os, pickle, sys, types

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
CKPT = os.path.join(HERE, "..", "checkpoints")
USERS = os.path.join(CKPT, "users")


def randn(seed, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def save(path, obj, expect=None, **kw):
    torch.save(obj, path, **kw)
    if expect is not None:
        np.save(path[:-3] + ".expect.npy", np.ascontiguousarray(expect.detach().float().numpy()))
    print(os.path.relpath(path, HERE), os.path.getsize(path), "bytes")


def latents():
    L = lambda n: os.path.join(HERE, n)
    wp = randn(23, 2, 6, 8)
    save(L("e4e_latents.pt"), wp, wp)
    save(L("e4e_latents_legacy.pt"), wp, wp, _use_new_zipfile_serialization=False)
    half = randn(24, 2, 6, 8).half()
    save(L("e4e_latents_f16.pt"), half, half)

    def projector(latent_in, names, path):
        img = randn(25, len(names), 3, 16, 16)
        noises = [randn(26 + k, len(names), 1, r, r) for k, r in enumerate([4, 8, 8, 16, 16])]
        result = {}
        for i, name in enumerate(names):
            result[name] = {"img": img[i], "latent": latent_in[i], "noise": [n[i:i + 1] for n in noises]}
        save(path, result, latent_in)

    w = randn(27, 2, 8).requires_grad_(True)
    projector(w, ["inputs/face0.png", "inputs/face1.png"], L("projector_w.pt"))
    wplus = randn(28, 1, 6, 8).requires_grad_(True)
    projector(wplus, ["face.png"], L("projector_wplus.pt"))
    single = randn(29, 6, 8)
    save(L("projector_single.pt"), {"img": randn(30, 3, 16, 16), "latent": single,
                                    "noise": [randn(31, 1, 1, 4, 4)]}, single.unsqueeze(0))
    d = randn(32, 3, 8)
    save(L("dict_latents.pt"), {"latents": d, "names": ["a", "b", "c"]}, d)
    codes = randn(33, 2, 6, 8)
    save(L("dict_one_tensor.pt"), {"codes": codes}, codes)
    save(L("dict_two_tensors.pt"), {"a": randn(34, 2, 8), "b": randn(35, 2, 8)})
    save(L("int_tensor.pt"), torch.arange(16, dtype=torch.int64).reshape(2, 8))
    save(L("strings.pt"), {"x": "hello", "y": 3})
    save(L("list_of_tensors.pt"), [randn(36, 8), randn(37, 8)])
    arr = np.random.RandomState(38).randn(2, 8).astype(np.float32)
    with open(L("numpy_latents.pkl"), "wb") as f:
        pickle.dump(arr, f, protocol=4)
    np.save(L("numpy_latents.expect.npy"), arr)
    # GLOBAL posix.system, the argument 'echo', TUPLE1, REDUCE, STOP: never loaded by anything.
    with open(L("os_system.pkl"), "wb") as f:
        f.write(b"\x80\x02cposix\nsystem\nX\x04\x00\x00\x00echo\x85R.")


def stand_in_generator():
    """A module class model.Generator, as rosinality's model.py defines one (only the name matters)."""
    mod = types.ModuleType("model")
    sys.modules["model"] = mod

    class Generator(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.style = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Linear(16, 16))
            self.input = torch.nn.Parameter(randn(40, 1, 8, 4, 4))
            self.register_buffer("noise_0", randn(41, 1, 1, 4, 4))

    Generator.__module__ = "model"
    Generator.__qualname__ = "Generator"
    mod.Generator = Generator
    torch.manual_seed(42)
    return Generator()


def checkpoints():
    U = lambda n: os.path.join(USERS, n)
    g = stand_in_generator()
    save(U("g_ema_module.pt"), g)
    save(U("g_ema_module_legacy.pt"), g, _use_new_zipfile_serialization=False)
    save(U("g_ema_module_in_dict.pt"), {"g_ema": g, "latent_avg": randn(43, 16)})
    ck = torch.load(os.path.join(CKPT, "rosinality16.pt"))
    sd, latent_avg = ck["g_ema"], ck["latent_avg"]
    prefixed = collections.OrderedDict(("module." + k, v) for k, v in sd.items())
    save(U("rosinality16_dataparallel.pt"), {"g_ema": prefixed, "latent_avg": latent_avg})
    save(U("rosinality16_module_bare.pt"), prefixed)
    official = torch.load(os.path.join(USERS, "g_ema_official_sd.pt"))["G_ema"]
    save(U("g_ema_official_sd_module.pt"),
         {"G_ema": collections.OrderedDict(("module." + k, v) for k, v in official.items())})
    save(U("prefixed_unknown.pt"), collections.OrderedDict(
        [("generator.fc.weight", randn(44, 4, 4)), ("generator.fc.bias", randn(45, 4))]))
    nan_avg = latent_avg.clone()
    nan_avg[3] = float("nan")
    save(U("rosinality16_nan_w_avg.pt"), {"g_ema": sd, "latent_avg": nan_avg})


def main():
    torch.set_num_threads(1)
    latents()
    checkpoints()


if __name__ == "__main__":
    main()
