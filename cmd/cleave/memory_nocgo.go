//go:build !cgo

package main

// pebbleOffHeap tells whether Pebble allocates its cache and memtables outside the Go heap:
// without cgo they are Go allocations (pebble/internal/manual).
const pebbleOffHeap = false
