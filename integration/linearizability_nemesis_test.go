package integration

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// nemesis is the linearizability test's faults: it cuts a node off from the others' raft
// messages (the test command _cleaveRaftFault, sent to every node) and heals, then SIGKILLs a
// node and restarts it, in turn, with a pause between faults. It runs in the test's goroutine
// (a restart may fail the test). Its events are annotations of the history's visualization.
type nemesis struct {
	t      *testing.T
	nodes  []*server
	admin  []*mongo.Client // a client of each node
	h      *linHistory
	rnd    *rand.Rand
	events []porcupine.Annotation
}

// The nemesis' timing: a pause between faults, how long a node stays cut off, how long a
// killed node stays down, and the least time left for a fault to start.
const (
	nemesisPause   = 2 * time.Second
	nemesisCut     = 4 * time.Second
	nemesisDown    = time.Second
	nemesisMinLeft = 6 * time.Second
)

// run injects faults until deadline, then heals.
func (n *nemesis) run(deadline time.Time) {
	for round := 0; ; round++ {
		time.Sleep(nemesisPause)
		if time.Until(deadline) < nemesisMinLeft {
			break
		}
		victim := n.rnd.IntN(len(n.nodes))
		name := nodeName(victim)
		if round%2 == 0 {
			start := n.h.now()
			n.fault(bson.E{Key: "isolate", Value: bson.A{name}})
			time.Sleep(nemesisCut)
			n.fault(bson.E{Key: "off", Value: true})
			n.note(start, "isolated "+name+" from the others' raft messages")
			continue
		}
		start := n.h.now()
		n.nodes[victim].kill()
		time.Sleep(nemesisDown)
		n.nodes[victim].restart()
		n.note(start, "SIGKILLed "+name+" and restarted it")
	}
	time.Sleep(time.Until(deadline))
}

// nodeName is the name of the i-th node of startClusterNodes.
func nodeName(i int) string { return fmt.Sprintf("node-%c", 'a'+i) }

// fault sends _cleaveRaftFault with arg to every node, each until it answers (a heal must
// reach them all).
func (n *nemesis) fault(arg bson.E) {
	n.t.Helper()
	sendRaftFault(n.t, n.admin, arg)
}

// note records a fault that ran from start until now.
func (n *nemesis) note(start int64, what string) {
	n.events = append(n.events, porcupine.Annotation{Tag: "nemesis", Start: start, End: n.h.now(), Description: what,
		BackgroundColor: "#fbe3e3"})
}
