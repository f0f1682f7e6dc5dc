//go:build cgo

package main

// pebbleOffHeap tells whether Pebble allocates its cache and memtables outside the Go heap:
// with cgo it uses C's calloc (pebble/internal/manual).
const pebbleOffHeap = true
