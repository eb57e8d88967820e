// LOOM_CPU_CLONES: build a hot CPU kernel twice, for AVX2+FMA (x86-64-v3) and the baseline, and
// pick one when the library loads (GCC's target_clones, an IFUNC). Empty elsewhere, and under
// ThreadSanitizer: it instruments the IFUNC's resolver, which the dynamic loader runs before the
// TSan runtime is initialised, so the library crashes at load (the tsan preset).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__) && \
    defined(__has_attribute)
#if __has_attribute(target_clones)
#define LOOM_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
// Also an AVX-512 (x86-64-v4) clone, for code whose bits cannot depend on the clone: built
// without floating-point contraction (vector_math.cpp), each element is the same sequence of IEEE
// operations at any vector width.
#define LOOM_CPU_CLONES_WITH_AVX512 __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#endif
#ifndef LOOM_CPU_CLONES_WITH_AVX512
#define LOOM_CPU_CLONES_WITH_AVX512
#endif
#ifndef LOOM_CPU_CLONES
#define LOOM_CPU_CLONES
#endif
