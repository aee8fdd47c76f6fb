#!/usr/bin/env python3
"""Writes the small checkpoints sg2's converter tests read (tests/test_convert*.cpp,
tests/test_pickle*.cpp, tests/test_torch*.cpp). Run by a developer, not by CI:

    /usr/bin/python3 tests/data/checkpoints/make_checkpoints.py --ada /path/to/stylegan2-ada-pytorch

Needs Debian's python3-torch 1.13 and numpy 1.24 (/usr/bin/python3 here) and a checkout of
NVlabs/stylegan2-ada-pytorch (commit d72cc7d0; its code is imported from that path, never copied
into sg2). What each file is, and what the C++ tests check it against:

ada_base16.pkl            official stylegan2-ada-pytorch Generator (resnet, res 16, c_dim 3, z 12,
                          w 16, 3 mapping layers, conv_clamp 256, fp16 blocks 8-16), official
                          persistence pickle with a placeholder module source. Float32, contiguous.
                          ada_base16_s0_{ws,img}.npy: the official forward (force_fp32, psi 0.7,
                          noise const, class 1) for seed 0: an end-to-end golden for this net.
ada_channels_last16.pkl   the same weights as the official code makes them with
                          fp16_channels_last=True: conv weights of the fp16 blocks are
                          channels-last (non-contiguous strides). Checked: tensors == base.
ada_fp16_16.pkl           the same network after .half() (HalfStorage); a parameter carries a
                          Python attribute (-> _rebuild_parameter_with_state) and a buffer too
                          (-> _rebuild_from_type_v2). Checked: tensors == fp16(base).
ada_bf16_16.pkl           the same after .to(bfloat16). Checked: tensors == bf16(base).
tf_ada_resnet16.pkl       a TensorFlow StyleGAN2-ADA pickle (G, D, Gs) of the base weights, written
                          with a stand-in dnnlib.tflib.network.Network in the layout of
                          NVlabs/stylegan2-ada's network.py (state version 5) and variable names
                          of its training/networks.py (spec §7b). tf_ada_resnet16_official.pkl:
                          Gs converted by the official legacy.convert_tf_generator, then pickled
                          officially. Checked: sg2's conversion == the official conversion, bit
                          for bit, and its images == tf_ada_resnet16_s0_img.npy (official forward).
tf_orig16_gray.pkl        the same for original TensorFlow StyleGAN2 (state version 4,
                          G_synthesis_stylegan2, Gs var 'lod', architecture 'orig', 1 channel,
                          unconditional); tf_orig16_gray_official.pkl as above.
rosinality16.pt           a rosinality convert_weight.py layout {'g_ema', 'latent_avg'} (zip), random
                          weights under rosinality's model.py names (size 16, style 16, n_mlp 2).
rosinality16_legacy.pt    the same dict with _use_new_zipfile_serialization=False (legacy format).
                          Checked: tensors == the zip file's.
rosinality16_train.pt     rosinality's train.py layout {g, d, g_ema, g_optim, d_optim, args
                          (argparse.Namespace), ada_aug_p}: no latent_avg. rosinality16_train_w_avg.npy:
                          the documented w_avg estimate computed here in float64 numpy
                          (mean of the mapping over RandomState(0).randn(10000, 16).astype(float32)).
unsupported_*.pkl/.pt     stand-ins of what sg2 must refuse: StyleGAN1 TF (version 3, StyleMod),
                          progressive TF (ToRGB_lod), StyleGAN3 alias-free (SynthesisInput),
                          discriminator-only, SWAGAN (12-channel to_rgb, iwt buffers).
pickles/*.pkl             plain data pickled with protocols 0-5, numpy arrays (protocol 2 with
                          _codecs bytes, protocol 4, protocol 5 _frombuffer), a tensor whose storage
                          blob is a zip-format torch.save.
"""
import argparse, collections, copy, io, os, pickle, sys, types

import numpy as np
import torch

OUT = os.path.dirname(os.path.abspath(__file__))
PLACEHOLDER = "# placeholder: source code of module '{}' omitted from this test file\n"


# --- stand-in modules (only their names reach the pickles) ---------------------------------
def fake_module(name):
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    return mod


def install_tf_stub():
    for name in ["dnnlib.tflib", "dnnlib.tflib.network"]:
        if name not in sys.modules:
            fake_module(name)
    netmod = sys.modules["dnnlib.tflib.network"]

    class Network:
        def __init__(self, state):
            self._state = state

        def __getstate__(self):
            return self._state

    Network.__module__ = "dnnlib.tflib.network"
    Network.__qualname__ = "Network"
    netmod.Network = Network
    return Network


def persistent_standin(class_name, state):
    """An object pickled as torch_utils.persistence does: REDUCE(_reconstruct_persistent_obj, (meta,))."""
    pers = sys.modules["torch_utils.persistence"]

    class Obj:
        def __reduce__(self):
            meta = dict(type="class", version=6, module_src=PLACEHOLDER.format("training.networks"), class_name=class_name,
                        state=state)
            return (pers._reconstruct_persistent_obj, (meta,))

    return Obj()


def module_state(params=None, buffers=None, modules=None, **attrs):
    s = dict(training=False, _parameters=collections.OrderedDict(params or {}), _buffers=collections.OrderedDict(buffers or {}),
             _non_persistent_buffers_set=set(), _modules=collections.OrderedDict(modules or {}))
    s.update(attrs)
    return s


# --- the official network -------------------------------------------------------------------
def official_generator(networks, **kw):
    G = networks.Generator(z_dim=kw["z_dim"], c_dim=kw["c_dim"], w_dim=kw["w_dim"], img_resolution=kw["res"],
                           img_channels=kw["img_channels"], mapping_kwargs=dict(num_layers=kw["mapping_layers"]),
                           synthesis_kwargs=dict(channel_base=kw["channel_base"], channel_max=kw["channel_max"],
                                                 num_fp16_res=kw["num_fp16_res"], conv_clamp=kw["conv_clamp"],
                                                 architecture=kw["architecture"],
                                                 fp16_channels_last=kw.get("channels_last", False)))
    G.eval().requires_grad_(False)
    gen = torch.Generator().manual_seed(kw["seed"])
    rnd = lambda *s: torch.randn(*s, generator=gen)
    with torch.no_grad():
        for name, p in G.named_parameters():  # non-trivial values everywhere (cf. the fixtures)
            if name.endswith("noise_strength"):
                p.copy_(0.3 * rnd(p.shape))
            elif name.endswith("affine.bias"):
                p.copy_(1 + 0.25 * rnd(p.shape))
            elif name.endswith(".bias"):
                p.add_(0.1 * rnd(p.shape))
            elif "torgb.weight" in name:
                p.mul_(0.3)
        zs = rnd([64, kw["z_dim"]])
        cs = torch.zeros([64, kw["c_dim"]])
        if kw["c_dim"]:
            cs[torch.arange(64), torch.arange(64) % kw["c_dim"]] = 1
        G.mapping.w_avg.copy_(G.mapping(zs, cs)[:, 0].mean(0) + 0.1 * rnd([kw["w_dim"]]))
    return G


def dump_official(path, G, networks, modname="training.networks"):
    saved = {}
    for cls in vars(networks).values():
        if isinstance(cls, type) and hasattr(cls, "_orig_module_src"):
            saved[cls] = cls._orig_module_src
            cls._orig_module_src = PLACEHOLDER.format(modname)
    try:
        with open(path, "wb") as f:
            pickle.dump(dict(G=None, D=None, G_ema=G, training_set_kwargs=None, augment_pipe=None), f, protocol=4)
    finally:
        for cls, src in saved.items():
            cls._orig_module_src = src
    print(os.path.basename(path), os.path.getsize(path), "bytes")


def official_golden(G, prefix, c_dim, psi=0.7):
    z = torch.from_numpy(np.random.RandomState(0).randn(1, G.z_dim))
    c = torch.zeros([1, c_dim])
    if c_dim:
        c[0, 1] = 1
    ws = G.mapping(z, c, truncation_psi=psi)
    img = G.synthesis(ws, noise_mode="const", force_fp32=True)
    np.save(os.path.join(OUT, prefix + "_s0_ws.npy"), ws.numpy())
    np.save(os.path.join(OUT, prefix + "_s0_img.npy"), img.numpy())


# --- TensorFlow layouts (inverse of legacy.convert_tf_generator) ----------------------------
def tf_variables(G, architecture):
    sd = {k: v.detach().float().numpy() for k, v in G.state_dict().items()}
    conv = lambda w, flip=False: (np.flip(w.transpose(2, 3, 1, 0), (0, 1)) if flip else w.transpose(2, 3, 1, 0)).copy()
    mapping, synth = [], []
    if "mapping.embed.weight" in sd:
        mapping += [("LabelEmbed/weight", sd["mapping.embed.weight"].T.copy()), ("LabelEmbed/bias", sd["mapping.embed.bias"])]
    i = 0
    while f"mapping.fc{i}.weight" in sd:
        mapping += [(f"Dense{i}/weight", sd[f"mapping.fc{i}.weight"].T.copy()), (f"Dense{i}/bias", sd[f"mapping.fc{i}.bias"])]
        i += 1
    res = G.img_resolution
    layers = []
    for r in G.synthesis.block_resolutions:
        layers += [(r, "conv0")] if r > 4 else []
        layers += [(r, "conv1")]
    for j, (r, name) in enumerate(layers):
        synth.append((f"noise{j}", sd[f"synthesis.b{r}.{name}.noise_const"][None, None].copy()))
    synth.append(("4x4/Const/const", sd["synthesis.b4.const"][None].copy()))

    def layer(tf, pt, flip=False, noise=True):
        out = [(tf + "weight", conv(sd[pt + "weight"], flip)), (tf + "mod_weight", sd[pt + "affine.weight"].T.copy()),
               (tf + "mod_bias", (sd[pt + "affine.bias"] - 1).astype(np.float32))]
        if noise:
            out.append((tf + "noise_strength", np.float32(sd[pt + "noise_strength"])))
        out.append((tf + "bias", sd[pt + "bias"]))
        return out

    for r in G.synthesis.block_resolutions:
        tb, pb = ("4x4/" if r == 4 else f"{r}x{r}/"), f"synthesis.b{r}."
        if r == 4:
            synth += layer(tb + "Conv/", pb + "conv1.")
        else:
            synth += layer(tb + "Conv0_up/", pb + "conv0.", flip=True)
            synth += layer(tb + "Conv1/", pb + "conv1.")
            if architecture == "resnet":
                synth.append((tb + "Skip/weight", conv(sd[pb + "skip.weight"], True)))
        if architecture == "skip" or r == res:
            synth += layer(tb + "ToRGB/", pb + "torgb.", noise=False)
    return mapping, synth, sd["mapping.w_avg"]


def write_tf_pickle(path, G, kwargs, version, synth_func, with_lod):
    Network = install_tf_stub()
    mapping_vars, synth_vars, w_avg = tf_variables(G, kwargs.get("architecture", "skip"))
    num_ws = G.num_ws

    def net(name, func, variables, components=None, static=None):
        st = dict(version=version, name=name, static_kwargs=dict(static if static is not None else kwargs),
                  components=components or {}, build_module_src=PLACEHOLDER.format("training.networks"),
                  build_func_name=func, variables=variables)
        if version >= 5:
            st.update(input_shapes=[[None, num_ws, G.w_dim]], output_shapes=[[None, G.img_channels, G.img_resolution, G.img_resolution]],
                      input_names=["dlatents_in"], output_names=["images_out"])
        return Network(st)

    def generator(name):
        synthesis = net("G_synthesis", synth_func, synth_vars)
        mapping = net("G_mapping", "G_mapping", mapping_vars, static=dict(kwargs, dlatent_broadcast=num_ws))
        own = ([("lod", np.float32(0))] if with_lod else []) + [("dlatent_avg", w_avg)]
        return net(name, "G_main", own, dict(synthesis=synthesis, mapping=mapping))

    D = net("D", "D_main" if version >= 5 else "D_stylegan2", [("Output/bias", np.zeros([1], np.float32))], static={})
    with open(path, "wb") as f:
        pickle.dump((generator("G"), D, generator("Gs")), f, protocol=4)
    print(os.path.basename(path), os.path.getsize(path), "bytes")


def official_tf_conversion(path, legacy):
    with open(path, "rb") as f:
        G_tf, _, Gs = legacy._LegacyUnpickler(f).load()
    return legacy.convert_tf_generator(Gs)


# --- rosinality layouts ---------------------------------------------------------------------
def rosinality_state_dict(seed, size=16, D=16, n_mlp=2, ch=None):
    ch = ch or {4: 8, 8: 8, 16: 4}
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g)
    kernel = torch.tensor([1.0, 3, 3, 1])
    kernel = kernel[None] * kernel[:, None]
    kernel = kernel / kernel.sum() * 4
    sd = collections.OrderedDict()
    for i in range(1, n_mlp + 1):
        sd[f"style.{i}.weight"] = r(D, D) / 0.01
        sd[f"style.{i}.bias"] = 0.1 * r(D)
    sd["input.input"] = r(1, ch[4], 4, 4)

    def layer(prefix, ci, co, up):
        sd[prefix + "conv.weight"] = r(1, co, ci, 3, 3)
        if up:
            sd[prefix + "conv.blur.kernel"] = kernel.clone()
        sd[prefix + "conv.modulation.weight"] = r(ci, D)
        sd[prefix + "conv.modulation.bias"] = 1 + 0.25 * r(ci)
        sd[prefix + "noise.weight"] = 0.3 * r(1)
        sd[prefix + "activate.bias"] = 0.1 * r(co)

    def torgb(prefix, c, up):
        sd[prefix + "bias"] = 0.1 * r(1, 3, 1, 1)
        if up:
            sd[prefix + "upsample.kernel"] = kernel.clone()
        sd[prefix + "conv.weight"] = 0.3 * r(1, 3, c, 1, 1)
        sd[prefix + "conv.modulation.weight"] = r(c, D)
        sd[prefix + "conv.modulation.bias"] = 1 + 0.25 * r(c)

    layer("conv1.", ch[4], ch[4], False)
    torgb("to_rgb1.", ch[4], False)
    res = [8 * 2 ** k for k in range(int(np.log2(size)) - 2)]
    for k, rr in enumerate(res):
        layer(f"convs.{2 * k}.", ch[rr // 2], ch[rr], True)
        layer(f"convs.{2 * k + 1}.", ch[rr], ch[rr], False)
    for k, rr in enumerate(res):
        torgb(f"to_rgbs.{k}.", ch[rr], True)
    j = 0
    for rr in [4] + [x for x in res for _ in range(2)]:
        sd[f"noises.noise_{j}"] = r(1, 1, rr, rr)
        j += 1
    return sd


def rosinality_mapping_mean(sd, n_mlp, D, samples=10000, seed=0, lr=0.01):
    z = np.random.RandomState(seed).randn(samples, D).astype(np.float32).astype(np.float64)
    x = z / np.sqrt(np.mean(z * z, axis=1, keepdims=True) + 1e-8)
    for i in range(1, n_mlp + 1):
        W = sd[f"style.{i}.weight"].double().numpy() * (lr / np.sqrt(D))
        b = sd[f"style.{i}.bias"].double().numpy() * lr
        x = x @ W.T + b
        x = np.where(x >= 0, x, 0.2 * x) * np.sqrt(2)
    return x.mean(0).astype(np.float32)


def save_torch(path, obj, legacy=False):
    torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
    print(os.path.basename(path), os.path.getsize(path), "bytes")


# --- plain pickles --------------------------------------------------------------------------
def sample_value():
    shared = ["shared", 7]
    return collections.OrderedDict([
        ("none", None), ("true", True), ("false", False), ("small", 7), ("neg", -300), ("int32", 2 ** 31 - 1),
        ("int64", -2 ** 62), ("big", 2 ** 80 + 5), ("float", 1.5), ("text", "héllo"), ("bytes", b"\x00\x01\xff"),
        ("tuple", (1, "two", 3.0)), ("list", [1, [2, [3]]]), ("set", {4}), ("frozenset", frozenset({5})),
        ("nested", {"a": {"b": {"c": 1}}}), ("shared1", shared), ("shared2", shared), ("empty", ()),
    ])


def write_plain_pickles():
    d = os.path.join(OUT, "pickles")
    os.makedirs(d, exist_ok=True)
    for proto in range(6):
        with open(os.path.join(d, f"plain_p{proto}.pkl"), "wb") as f:
            pickle.dump(sample_value(), f, protocol=proto)
    arr = np.arange(12, dtype=np.float32).reshape(3, 4) / 8
    arrays = dict(f32=arr, f64=arr.astype(np.float64), f16=arr.astype(np.float16), fortran=np.asfortranarray(arr),
                  be=arr.astype(">f4"), i64=np.arange(3, dtype=np.int64), scalar=np.float32(2.5), zero_d=np.array(3.25, np.float32))
    for proto in (2, 4, 5):
        with open(os.path.join(d, f"numpy_p{proto}.pkl"), "wb") as f:
            pickle.dump(arrays, f, protocol=proto)
    # A tensor whose storage blob is a zip-format torch.save (sg2 reads it defensively).
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3) / 4
    buf = io.BytesIO()
    torch.save(t.storage(), buf, _use_new_zipfile_serialization=True)

    class Blob:
        def __reduce__(self):
            return (torch.storage._load_from_bytes, (buf.getvalue(),))

    class T:
        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v2, (Blob(), 0, (2, 3), (3, 1), False, collections.OrderedDict()))

    with open(os.path.join(d, "zip_storage_blob.pkl"), "wb") as f:
        pickle.dump({"t": T(), "plain": torch.arange(4, dtype=torch.float64)}, f, protocol=4)
    print("pickles/ written")


# --- unsupported stand-ins ------------------------------------------------------------------
def write_unsupported():
    Network = install_tf_stub()
    z = np.zeros
    st = lambda version, name, func, variables, comps=None: Network(dict(
        version=version, name=name, static_kwargs=dict(resolution=8), components=comps or {}, build_module_src="#",
        build_func_name=func, variables=variables))
    sg1 = st(3, "Gs", "G_style", [("dlatent_avg", z([8], np.float32))], dict(
        synthesis=st(3, "G_synthesis", "G_synthesis", [("4x4/Const/const", z([1, 8, 4, 4], np.float32)),
                                                         ("4x4/Const/StyleMod/weight", z([8, 16], np.float32))]),
        mapping=st(3, "G_mapping", "G_mapping", [("Dense0/weight", z([8, 8], np.float32))])))
    with open(os.path.join(OUT, "unsupported_stylegan1_tf.pkl"), "wb") as f:
        pickle.dump((sg1, sg1, sg1), f, protocol=4)
    prog = st(4, "Gs", "G_main", [("lod", np.float32(0)), ("dlatent_avg", z([8], np.float32))], dict(
        synthesis=st(4, "G_synthesis", "G_synthesis_stylegan2", [("4x4/Conv/mod_weight", z([8, 8], np.float32)),
                                                                  ("ToRGB_lod0/weight", z([1, 1, 8, 3], np.float32))]),
        mapping=st(4, "G_mapping", "G_mapping", [("Dense0/weight", z([8, 8], np.float32))])))
    with open(os.path.join(OUT, "unsupported_progressive_tf.pkl"), "wb") as f:
        pickle.dump((prog, prog, prog), f, protocol=4)
    t = lambda *s: torch.zeros(*s)
    syn = persistent_standin("SynthesisNetwork", module_state(modules=dict(
        input=persistent_standin("SynthesisInput", module_state(buffers=dict(freqs=t(8, 2)))),
        L0_36_512=persistent_standin("SynthesisLayer", module_state(params=dict(weight=torch.nn.Parameter(t(8, 8, 3, 3))))))))
    mapping = persistent_standin("MappingNetwork", module_state(modules=dict(
        fc0=persistent_standin("FullyConnectedLayer", module_state(params=dict(weight=torch.nn.Parameter(t(8, 8))))))))
    G = persistent_standin("Generator", module_state(modules=dict(synthesis=syn, mapping=mapping), z_dim=8, w_dim=8))
    with open(os.path.join(OUT, "unsupported_stylegan3.pkl"), "wb") as f:
        pickle.dump(dict(G=G, D=None, G_ema=G, training_set_kwargs=None, augment_pipe=None), f, protocol=4)
    D = persistent_standin("Discriminator", module_state(modules=dict(
        b8=persistent_standin("DiscriminatorBlock", module_state(params=dict(weight=torch.nn.Parameter(t(4, 4))))))))
    with open(os.path.join(OUT, "unsupported_discriminator.pkl"), "wb") as f:
        pickle.dump(dict(D=D, training_set_kwargs=None), f, protocol=4)
    sd = rosinality_state_dict(5, size=8)
    sd["to_rgb1.conv.weight"] = t(1, 12, 8, 1, 1)
    sd["to_rgbs.0.iwt.ll"] = t(1, 1, 2, 2)
    save_torch(os.path.join(OUT, "unsupported_swagan.pt"), dict(g_ema=sd, latent_avg=t(16)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ada", required=True, help="checkout of NVlabs/stylegan2-ada-pytorch (commit d72cc7d0)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    sys.path.insert(0, args.ada)
    import legacy
    from training import networks

    # ada variants of one network.
    kw = dict(z_dim=12, w_dim=16, c_dim=3, res=16, img_channels=3, mapping_layers=3, channel_base=128, channel_max=8,
              num_fp16_res=2, conv_clamp=256, architecture="resnet", channels_last=True, seed=16)
    G_cl = official_generator(networks, **kw)
    cl = [n for n, p in G_cl.named_parameters() if p.dim() == 4 and not p.is_contiguous()]
    assert cl, "expected channels-last weights"
    G = copy.deepcopy(G_cl)
    with torch.no_grad():
        for p in list(G.parameters()) + list(G.buffers()):
            p.data = p.data.contiguous()
    dump_official(os.path.join(OUT, "ada_base16.pkl"), G, networks)
    official_golden(G, "ada_base16", kw["c_dim"])
    dump_official(os.path.join(OUT, "ada_channels_last16.pkl"), G_cl, networks)
    G16 = copy.deepcopy(G).half()
    G16.mapping.fc0.weight.sg2_note = "a Python attribute on a Parameter"
    G16.synthesis.b8.conv0.noise_const.sg2_note = "a Python attribute on a buffer"
    dump_official(os.path.join(OUT, "ada_fp16_16.pkl"), G16, networks)
    dump_official(os.path.join(OUT, "ada_bf16_16.pkl"), copy.deepcopy(G).to(torch.bfloat16), networks)

    # TensorFlow: TF-ADA (version 5, resnet, conditional, fp16 + clamp kwargs) and original TF.
    tf_kwargs = dict(num_channels=3, resolution=16, label_size=3, fmap_base=64, fmap_max=8, latent_size=12, dlatent_size=16,
                     label_fmaps=16, mapping_layers=3, num_fp16_res=2, conv_clamp=256, architecture="resnet")
    path = os.path.join(OUT, "tf_ada_resnet16.pkl")
    write_tf_pickle(path, G, tf_kwargs, 5, "G_synthesis", False)
    Gc = official_tf_conversion(path, legacy)
    dump_official(os.path.join(OUT, "tf_ada_resnet16_official.pkl"), Gc, networks)
    official_golden(Gc, "tf_ada_resnet16", 3)
    kw2 = dict(z_dim=16, w_dim=16, c_dim=0, res=16, img_channels=1, mapping_layers=2, channel_base=128, channel_max=8,
               num_fp16_res=0, conv_clamp=None, architecture="orig", seed=17)
    G2 = official_generator(networks, **kw2)
    tf2 = dict(num_channels=1, resolution=16, label_size=0, fmap_base=64, fmap_max=8, latent_size=16, dlatent_size=16,
               mapping_layers=2, architecture="orig", truncation_psi=0.5)
    path = os.path.join(OUT, "tf_orig16_gray.pkl")
    write_tf_pickle(path, G2, tf2, 4, "G_synthesis_stylegan2", True)
    Gc2 = official_tf_conversion(path, legacy)
    dump_official(os.path.join(OUT, "tf_orig16_gray_official.pkl"), Gc2, networks)
    official_golden(Gc2, "tf_orig16_gray", 0)

    # rosinality.
    sd = rosinality_state_dict(21)
    latent_avg = torch.randn(16, generator=torch.Generator().manual_seed(3))
    save_torch(os.path.join(OUT, "rosinality16.pt"), dict(g_ema=sd, latent_avg=latent_avg))
    save_torch(os.path.join(OUT, "rosinality16_legacy.pt"), dict(g_ema=sd, latent_avg=latent_avg), legacy=True)
    g = collections.OrderedDict((k, v + 0.01 * torch.randn_like(v)) for k, v in sd.items())
    d = collections.OrderedDict([("convs.0.0.weight", torch.randn(4, 3, 1, 1)), ("final_linear.1.bias", torch.randn(1))])
    params = [torch.nn.Parameter(torch.randn(3, 3)) for _ in range(2)]
    opt = torch.optim.Adam(params, lr=0.002, betas=(0, 0.99))
    sum(p.sum() for p in params).backward()
    opt.step()
    ns = argparse.Namespace(size=16, n_mlp=2, latent=16, channel_multiplier=2, r1=10, augment=False, ada_target=0.6)
    train = dict(g=g, d=d, g_ema=sd, g_optim=opt.state_dict(), d_optim=opt.state_dict(), args=ns, ada_aug_p=0.0)
    save_torch(os.path.join(OUT, "rosinality16_train.pt"), train)
    np.save(os.path.join(OUT, "rosinality16_train_w_avg.npy"), rosinality_mapping_mean(sd, 2, 16))

    write_plain_pickles()
    write_unsupported()


if __name__ == "__main__":
    main()
