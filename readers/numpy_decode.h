// sg2 readers: numpy values recorded by the pickle reader, decoded without numpy.
//
// Whitelisted calls (numpy 1.x `numpy.core.*` and numpy 2 `numpy._core.*` spellings):
//  * `numpy.dtype(str, align, copy)` + BUILD((ver, byteorder, ...))          -> a dtype
//  * `numpy.core.multiarray.scalar(dtype, raw_bytes)`                        -> a scalar
//  * `numpy.core.multiarray._reconstruct(numpy.ndarray, (0,), b'b')` + BUILD((ver, shape, dtype,
//    is_fortran, raw_bytes))                                                -> an array (pickle <= 4)
//  * `numpy.core.numeric._frombuffer(buffer, dtype, shape, order)`           -> an array (pickle 5)
//  * `_codecs.encode(text, 'latin1')` where raw bytes are expected (Python 3 protocol 2 bytes)
// Layouts follow numpy's `ndarray.__reduce__` / `__setstate__` and `dtype.__reduce__`.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "readers/arrays.h"
#include "readers/pickle.h"

namespace sg2::readers {

/// A numpy dtype: element type and byte order.
struct NumpyDType {
  DType type = DType::f32;
  bool big_endian = false;
};

/// Raw bytes of a bytes / bytearray / latin-1 string value, or of `_codecs.encode(s, 'latin1')`
/// (re-encoded into `doc`). nullopt for anything else.
std::optional<std::string_view> bytes_of(const pickle::Node* n, pickle::Document& doc);

/// Decodes a numpy dtype object. nullopt when `n` is not one; throws Error(unsupported) for a
/// dtype sg2 cannot read (strings, records, complex), naming `what`.
std::optional<NumpyDType> numpy_dtype(const pickle::Node* n, const std::string& what);

/// The value of a numpy scalar (`numpy.float64(0.5)`, `numpy.float32(...)`, integer and bool
/// scalars), or nullopt when `n` is not one.
std::optional<double> numpy_scalar(const pickle::Node* n, pickle::Document& doc, const std::string& what);

/// A number from an int, bool, float or numpy scalar value; nullopt otherwise.
std::optional<double> as_number(const pickle::Node* n, pickle::Document& doc, const std::string& what);

/// A view of a numpy ndarray (never copies its bytes). nullopt when `n` is not an ndarray;
/// throws Error(bad_file) naming `what` when it is one but malformed (data shorter than the
/// shape, bad state tuple, ...). A numpy scalar is returned as a 0-d array.
std::optional<ArrayView> numpy_array(const pickle::Node* n, pickle::Document& doc, const std::string& what);

}  // namespace sg2::readers
