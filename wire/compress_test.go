package wire

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// compressors are the algorithms the server answers with.
var compressors = []Compressor{CompressorNoop, CompressorSnappy, CompressorZlib, CompressorZstd}

// TestCompressRoundTrip compresses and decompresses payloads of several sizes with each
// compressor, and checks that a wrong uncompressedSize or a damaged body is refused.
func TestCompressRoundTrip(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 300_000)
	for i := range random {
		random[i] = byte(rnd.Uint32())
	}
	payloads := map[string][]byte{
		"Empty":   {},
		"OneByte": {7},
		"Ping":    rawMsg(1, 0, sec0(ping))[HeaderSize:],
		"Repeat":  bytes.Repeat([]byte("abcdefgh"), 200_000),
		"Random":  random,
	}
	for _, c := range compressors {
		for name, p := range payloads {
			t.Run(c.String()+name, func(t *testing.T) {
				z, err := compress([]byte("prefix"), c, p)
				if err != nil {
					t.Fatal(err)
				}
				z = z[len("prefix"):]
				out, err := decompress([]byte("keep"), c, z, len(p))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out, append([]byte("keep"), p...)) {
					t.Fatal("round trip changed the payload")
				}
				for _, n := range []int{len(p) + 1, len(p) - 1} {
					if n < 0 {
						continue
					}
					if _, err := decompress(nil, c, z, n); err == nil {
						t.Fatalf("uncompressedSize %d accepted for a %d-byte payload", n, len(p))
					}
				}
				if len(z) > 1 && c != CompressorNoop {
					if out, err := decompress(nil, c, z[:len(z)/2], len(p)); err == nil && bytes.Equal(out, p) {
						t.Fatal("a truncated body decompressed to the payload")
					}
				}
			})
		}
	}
}

// TestParseCompressor checks the names hello negotiates with.
func TestParseCompressor(t *testing.T) {
	for _, c := range compressors[1:] {
		if got, ok := ParseCompressor(c.String()); !ok || got != c {
			t.Fatalf("ParseCompressor(%q) = %v, %v", c.String(), got, ok)
		}
	}
	if _, ok := ParseCompressor("noop"); ok {
		t.Fatal("noop must not be negotiated")
	}
}

// TestAppendCompressedShortFrame checks that a non-frame is refused.
func TestAppendCompressedShortFrame(t *testing.T) {
	if _, err := AppendCompressed(nil, CompressorSnappy, []byte{1, 2}); err == nil {
		t.Fatal("want an error")
	}
	if _, err := compress(nil, 9, []byte{1}); err == nil {
		t.Fatal("unknown compressor accepted")
	}
	if _, err := decompress(nil, 9, []byte{1}, 1); err == nil {
		t.Fatal("unknown compressor accepted")
	}
	var m Message
	if _, err := m.Decompress(); err == nil {
		t.Fatal("Decompress of a non-compressed message accepted")
	}
}

// FuzzDecompress checks that decompressing never panics, never returns other than exactly
// size bytes, and that what compresses decompresses back.
func FuzzDecompress(f *testing.F) {
	for _, tc := range messageCases {
		if len(tc.raw) >= HeaderSize+compressedPrefixSize && OpCode(le.Uint32(tc.raw[12:])) == OpCodeCompressed {
			b := tc.raw[HeaderSize:]
			f.Add(b[8], int32(le.Uint32(b[4:])), b[compressedPrefixSize:])
		}
	}
	f.Fuzz(func(t *testing.T, comp byte, size int32, data []byte) {
		c := Compressor(comp)
		if size >= 0 && size <= 1<<20 {
			if out, err := decompress(nil, c, data, int(size)); err == nil && len(out) != int(size) {
				t.Fatalf("decompressed %d bytes, want %d", len(out), size)
			}
		}
		if c > CompressorZstd {
			return
		}
		z, err := compress(nil, c, data)
		if err != nil {
			t.Fatal(err)
		}
		out, err := decompress(nil, c, z, len(data))
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("round trip failed: %v", err)
		}
	})
}
