package host

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/replica"
	"github.com/cleavedb/cleave/replica/raftlog"
	"github.com/cleavedb/cleave/store"
)

// noNet is the transport of a group of one: it has nobody to send to.
type noNet struct{}

func (noNet) Send(uint64, []*raftpb.Message) {}

// leadingAlone starts a replica that is the only member of its group, on a real raft log and
// store, and returns it once it leads and serves in raft's sense (ready not called yet).
func leadingAlone(t *testing.T) *hosted {
	t.Helper()
	logs, err := raftlog.Open(t.TempDir(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logs.Close() })
	db, err := store.Open(store.Options{Dir: "replica-0", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	r := &hosted{shard: 0, id: 1}
	r.db.Store(db)
	g, err := replica.Start(replica.Config{Group: 0, Replica: 1, Log: logs.Group(0), SM: replicaSM{r: r}, Net: noNet{},
		Peers: []uint64{1}, Tick: 10 * time.Millisecond, BeforeServe: db.ReloadDerived})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Stop)
	r.g = g
	for deadline := time.Now().Add(30 * time.Second); !g.Status().Serving; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a group of one did not elect itself within 30s")
		}
	}
	return r
}

// TestHostedReadyLaterTermWins: the serve of an earlier term finishing after the serve of the
// replica's current term (it lost its leadership and won it again meanwhile) leaves the
// replica serving: readyTerm never goes back, and the earlier serve learns that it is stale.
// Storing the earlier term kept a leader from serving for as long as it led, while its leader
// record sent every router to it.
func TestHostedReadyLaterTermWins(t *testing.T) {
	t.Parallel()
	r := leadingAlone(t)
	term := r.g.Status().Term
	if r.serving() {
		t.Fatal("serving before its serve finished")
	}
	if !r.ready(term) || !r.serving() {
		t.Fatalf("not serving after its serve in term %d finished", term)
	}
	if r.ready(term - 1) {
		t.Fatalf("the serve of term %d reports itself current in term %d", term-1, term)
	}
	if !r.serving() {
		t.Fatalf("the serve of term %d, finishing late, stopped the leader of term %d from serving", term-1, term)
	}
}
