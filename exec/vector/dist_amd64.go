package vector

import "golang.org/x/sys/cpu"

// useAVX2 is whether the CPU and the OS support AVX2 and FMA (x/sys/cpu checks that the OS
// saves the YMM registers), for the distances of dist_amd64.s (eight float32s an instruction).
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// l2sqAVX2 and dotAVX2 are l2sq and dot over the first n (a multiple of 8) elements.
//
//go:noescape
func l2sqAVX2(a, b *float32, n int) float32

//go:noescape
func dotAVX2(a, b *float32, n int) float32

// l2U8AVX2 and dotU8AVX2 are the squared Euclidean distance and the dot product of the first
// n (a multiple of 16) bytes of two scalar-quantized vectors (quant.go), sixteen bytes an
// iteration.
//
//go:noescape
func l2U8AVX2(a, b *uint8, n int) int32

//go:noescape
func dotU8AVX2(a, b *uint8, n int) int32
