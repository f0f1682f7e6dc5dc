package main

import (
	"testing"

	"github.com/cleavedb/cleave/store"
)

func TestConfigMemoryFlags(t *testing.T) {
	c, err := parseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.CacheSize != store.DefaultCacheSize || c.MemTableSize() != int64(store.DefaultMemTableSize) {
		t.Fatalf("defaults: cache %d, memtable %d", c.CacheSize, c.MemTableSize())
	}
	c, err = parseConfig([]string{"--cache-size", "1073741824", "--memtable-budget", "268435456", "--shards", "2"})
	if err != nil || c.CacheSize != 1<<30 || c.MemTableSize() != 32<<20 {
		t.Fatalf("flags: %+v, %v", c, err)
	}
	for _, args := range [][]string{{"--cache-size", "1000"}, {"--memtable-budget", "1000"}, {"--memtable-budget", "4194304", "--shards", "2"}} {
		if _, err := parseConfig(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
