// sg2: reading latents (ws, W or W+ rows, edit directions) from the files projectors, encoders and
// users write, without Python and without executing anything from the file.
//
// Accepted files, recognised by their content (never the name):
//  * .npy                a float array (numpy.save);
//  * .npz (numpy.savez or numpy.savez_compressed)  its array 'w' (NVIDIA projector.py's
//                        projected_w.npz, sg2 generate --save-latents), or its only array; only that
//                        member is read, its size checked against the memory available first;
//  * torch.save (zip or legacy format) or a plain pickle, read by sg2's safe pickle reader (tensors
//    and numpy arrays only, nothing is ever called), holding
//      - one tensor: e4e / pSp / StyleCLIP `torch.save(latents, 'latents.pt')`, [N, num_ws, w_dim];
//      - rosinality projector.py's result: {image path: {"img", "latent", "noise"}, ...}, whose
//        'latent' tensors ([w_dim], or [num_ws, w_dim] with --w_plus) are stacked in file order
//        into [N, w_dim] or [N, num_ws, w_dim] (one image's {"img", "latent", "noise"} dict, as
//        forks save per image, gives [1, ...]);
//      - a dict with a float tensor called 'w', 'ws', 'latent' or 'latents' (one of them), or with
//        exactly one tensor under any name (other entries, such as a list of names, are ignored).
// Anything else is refused with one line saying what the file holds and what is accepted (a whole
// pickled torch module, a call of os.system, a list of tensors, integers, strings, ...).
// Values are float32 (float16, bfloat16 and float64 are converted, rounding to nearest), every one
// finite. The shape is returned as stored (or stacked): fitting it to a model is the caller's
// rule (sg2 generate --ws: docs/cli.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "sg2/export.h"
#include "sg2/tensor.h"

SG2_PUBLIC_BEGIN
namespace sg2 {

/// Latents read from a file.
struct Latents {
  Tensor values;       ///< float32, C order; the stored shape (projector results: stacked per image)
  std::string format;  ///< "npy", "npz", "torch.save zip", "torch.save legacy" or "pickle"
  /// Which entry was used, for a note to the user (printable: file text is escaped): "" for .npy;
  /// "array 'w' of the .npz"; "the tensor of the torch.save file"; "tensor 'latents' of the dict";
  /// "'latent' of 2 images of a rosinality projector result ('a.png', 'b.png')".
  std::string note;
};

/// Reads the latents file `path` (see above). Throws Error(io) when it cannot be read,
/// Error(bad_file) naming the file for a broken file, contents that are not latents (saying what
/// is accepted), a non-float array, NaN or infinite values, a corrupt compressed member;
/// Error(out_of_memory) for an .npz array larger than the memory available; Error(unsupported)
/// for an .npz member neither stored nor DEFLATE-compressed.
Latents read_latents(const std::string& path);

/// The same from the bytes of a file in memory; `what` names it in messages.
Latents parse_latents(const uint8_t* data, size_t size, const std::string& what);

}  // namespace sg2
SG2_PUBLIC_END
