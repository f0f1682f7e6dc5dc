package main

import (
	"testing"

	"github.com/cleavedb/cleave/store"
)

// TestConfigDiskReserveFlags checks the reserve's defaults, its bounds, and how a bound
// turned off (0) reaches the store (negative: off; 0 there means the default).
func TestConfigDiskReserveFlags(t *testing.T) {
	c, err := parseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.DiskReserve != store.DefaultDiskReserve || c.DiskReservePercent != store.DefaultDiskReservePercent {
		t.Fatalf("defaults: %d bytes, %g%%", c.DiskReserve, c.DiskReservePercent)
	}
	c, err = parseConfig([]string{"--disk-reserve", "0", "--disk-reserve-percent", "2.5"})
	if err != nil || storeReserve(c.DiskReserve) != -1 || storeReserve(c.DiskReservePercent) != 2.5 {
		t.Fatalf("flags: %d, %g, %v", c.DiskReserve, c.DiskReservePercent, err)
	}
	for _, args := range [][]string{{"--disk-reserve", "-1"}, {"--disk-reserve-percent", "100"}, {"--disk-reserve-percent", "-5"}} {
		if _, err := parseConfig(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
