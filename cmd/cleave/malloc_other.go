//go:build !cgo || !linux

package main

import (
	"unsafe"

	"go.uber.org/zap"
)

// tuneMalloc does nothing: without cgo Pebble allocates from the Go heap, and other systems'
// C libraries have no glibc knobs.
func tuneMalloc(*zap.Logger) {}

// mmappedChunks is -1: unknown here.
func mmappedChunks() int { return -1 }

func cAlloc(int) unsafe.Pointer { return nil }
func cFree(unsafe.Pointer)      {}
