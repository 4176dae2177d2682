/* Qualifiers that let one header serve plain C, CUDA and HIP. */
#ifndef SY_PORTABLE_H
#define SY_PORTABLE_H

#if defined(__CUDACC__) || defined(__HIPCC__)
#define SY_HD __host__ __device__ __forceinline__
#else
#define SY_HD static inline
#endif

#endif
