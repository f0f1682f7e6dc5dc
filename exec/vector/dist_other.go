//go:build !amd64

package vector

// useAVX2 is false off amd64: the distances are plain Go.
const useAVX2 = false

func l2sqAVX2(a, b *float32, n int) float32 { panic("vector: no AVX2") }
func dotAVX2(a, b *float32, n int) float32  { panic("vector: no AVX2") }

func l2U8AVX2(a, b *uint8, n int) int32  { panic("vector: no AVX2") }
func dotU8AVX2(a, b *uint8, n int) int32 { panic("vector: no AVX2") }
