package sharding

import (
	"testing"

	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// TestStorePartsFromBudgets: across a split and a move, surviving partitions keep their
// budgets and a split's children share their parent's, so the budgets keep their sum.
func TestStorePartsFromBudgets(t *testing.T) {
	prev := []store.Partition{{ID: 1, Lo: 0, BudgetRU: 3000}, {ID: 2, Lo: 1 << 63, BudgetRU: 1000}}
	parts := []shard.Partition{{ID: 3, Lo: 0}, {ID: 4, Lo: 1 << 62}, {ID: 2, Lo: 1 << 63, Shard: 1}}
	got := StorePartsFrom(prev, parts)
	want := []float64{1500, 1500, 1000}
	for i := range got {
		if got[i].BudgetRU != want[i] || got[i].ID != parts[i].ID || got[i].Shard != parts[i].Shard {
			t.Fatalf("StorePartsFrom = %+v, want budgets %v", got, want)
		}
	}
	even := StorePartsFrom([]store.Partition{{ID: 1}}, []shard.Partition{{ID: 2}, {ID: 3, Lo: 1 << 63}})
	if even[0].BudgetRU != 0 || even[1].BudgetRU != 0 {
		t.Fatalf("even budgets became %+v", even)
	}
}
