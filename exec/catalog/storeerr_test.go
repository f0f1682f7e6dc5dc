package catalog

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestStoreErrorDisk checks the answers to the store's disk failures: a write refused under
// the reserve, and a failed commit with and without ENOSPC.
func TestStoreErrorDisk(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code mongoerr.Code
		msg  string
	}{
		{"Reserve", fmt.Errorf("shard 1: %w", &store.DiskFullError{Available: 1000, Required: 1 << 30}),
			mongoerr.OutOfDiskSpace, "available disk space of 1000 bytes is less than required minimum of 1073741824"},
		{"CommitENOSPC", fmt.Errorf("%w: db: failed: %w", store.ErrIO, syscall.ENOSPC),
			mongoerr.OutOfDiskSpace, "store: I/O error: db: failed: no space left on device"},
		{"CommitEIO", fmt.Errorf("%w: db: failed: %w", store.ErrIO, syscall.EIO),
			mongoerr.InternalError, "store: I/O error: db: failed: input/output error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			me := mongoerr.As(StoreError(tc.err))
			if me == nil || me.Code != tc.code || me.Message != tc.msg {
				t.Fatalf("StoreError(%v) = %v, want %v %q", tc.err, me, tc.code, tc.msg)
			}
			if !errors.Is(me, tc.err) && !errors.Is(me.Unwrap(), tc.err) {
				t.Fatalf("the cause is lost: %v", me.Unwrap())
			}
		})
	}
}
