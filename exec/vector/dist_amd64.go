package vector

// useAVX2 is whether the CPU and the OS support AVX2 and FMA, for the distances of
// dist_amd64.s (eight float32s an instruction).
var useAVX2 = hasAVX2FMA()

// hasAVX2FMA reports AVX2 and FMA, and that the OS saves the YMM registers.
func hasAVX2FMA() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, osxsave = 1 << 12, 1 << 27
	if ecx1&fma == 0 || ecx1&osxsave == 0 || xgetbv()&6 != 6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

// Implemented in dist_amd64.s.
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
func xgetbv() (eax uint32)

// l2sqAVX2 and dotAVX2 are l2sq and dot over the first n (a multiple of 8) elements.
//
//go:noescape
func l2sqAVX2(a, b *float32, n int) float32

//go:noescape
func dotAVX2(a, b *float32, n int) float32
