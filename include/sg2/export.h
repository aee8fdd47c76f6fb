// sg2: symbol visibility of the public API. The library is compiled with hidden visibility by
// default; every public header wraps its declarations in SG2_PUBLIC_BEGIN / SG2_PUBLIC_END, so
// exactly the public API is exported from libsg2 (and nothing of engine, kernels/,
// readers/ or util/ is).
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define SG2_PUBLIC_BEGIN _Pragma("GCC visibility push(default)")
#define SG2_PUBLIC_END _Pragma("GCC visibility pop")
#else
#define SG2_PUBLIC_BEGIN
#define SG2_PUBLIC_END
#endif
