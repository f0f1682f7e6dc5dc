package integration

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/anishathalye/porcupine"
)

// The sequential specification the linearizability test checks its history against
// (porcupine): one integer register per key, read, written, and compared-and-set.

// regInput is an operation on register Key: a read ('r'), a write of Val ('w'), or a
// compare-and-set ('c') of Val to New.
type regInput struct {
	Kind byte
	Key  int
	Val  int64
	New  int64
}

// regOutput is what an operation answered: a read's Val, a compare-and-set's OK (it
// swapped). Unknown: a write or compare-and-set that failed ambiguously (a network error, a
// leader stepping down, a timeout), which may or may not have taken effect; its return time
// is then the end of time, so that it may take effect at any point after its call, or (placed
// last) not at all.
type regOutput struct {
	Val     int64
	OK      bool
	Unknown bool
}

// neverReturned is the return time of an operation whose outcome is unknown.
const neverReturned = math.MaxInt64

// registerModel is a register per key, partitioned by key: each key's history is checked
// alone.
var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(regInput).Key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]int, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Ints(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		v, in, out := state.(int64), input.(regInput), output.(regOutput)
		switch in.Kind {
		case 'r':
			return out.Val == v, v
		case 'w':
			return true, in.Val
		}
		swaps := v == in.Val
		switch {
		case out.Unknown && swaps:
			return true, in.New
		case out.Unknown:
			return true, v
		case out.OK:
			return swaps, in.New
		}
		return !swaps, v
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regInput), output.(regOutput)
		switch in.Kind {
		case 'r':
			return fmt.Sprintf("get(k%d) -> %d", in.Key, out.Val)
		case 'w':
			if out.Unknown {
				return fmt.Sprintf("put(k%d, %d) -> ?", in.Key, in.Val)
			}
			return fmt.Sprintf("put(k%d, %d)", in.Key, in.Val)
		}
		res := fmt.Sprint(out.OK)
		if out.Unknown {
			res = "?"
		}
		return fmt.Sprintf("cas(k%d, %d, %d) -> %s", in.Key, in.Val, in.New, res)
	},
	DescribeState: func(state any) string { return fmt.Sprint(state.(int64)) },
	DescribeOperationMetadata: func(info any) string {
		if info == nil {
			return ""
		}
		return fmt.Sprint(info)
	},
}

// staleReads counts the plain reads (readConcern "local") that returned a value already
// overwritten before they began: the value's write had returned before another write of the
// key began, and that one returned before the read began. A lower bound (writes whose outcome
// is unknown never count). impossible describes the reads of a value that no write of the key
// had begun to write.
func staleReads(writes, reads []porcupine.Operation) (stale int, impossible []string) {
	type span struct {
		key       int
		call, ret int64
	}
	produced := map[int64]span{} // value -> its write
	acked := map[int][]span{}    // key -> the writes that took effect
	for _, op := range writes {
		in, out := op.Input.(regInput), op.Output.(regOutput)
		val := in.Val
		if in.Kind == 'c' {
			val = in.New
		}
		produced[val] = span{in.Key, op.Call, op.Return}
		if !out.Unknown && (in.Kind == 'w' || out.OK) {
			acked[in.Key] = append(acked[in.Key], span{in.Key, op.Call, op.Return})
		}
	}
	for _, op := range reads {
		in, out := op.Input.(regInput), op.Output.(regOutput)
		p, ok := produced[out.Val]
		if out.Val == 0 {
			p, ok = span{in.Key, math.MinInt64, math.MinInt64}, true
		}
		if !ok || p.key != in.Key || p.call > op.Return {
			impossible = append(impossible, fmt.Sprintf("client %d read k%d = %d in [%d, %d] (%v); its write: %+v (found %v)",
				op.ClientId, in.Key, out.Val, op.Call, op.Return, op.Metadata, p, ok))
			continue
		}
		for _, q := range acked[in.Key] {
			if p.ret < q.call && q.ret < op.Call {
				stale++
				break
			}
		}
	}
	return stale, impossible
}

// visualizationDir is where a violation's history is written: the test's artifact directory
// under -outputdir with -artifacts, else a directory of its own under the system's temporary
// directory, kept after the test.
func visualizationDir(t *testing.T) string {
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		return t.ArtifactDir()
	}
	dir, err := os.MkdirTemp("", "cleave-linearizability-")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkLinearizable checks history against the register model and, on a violation, writes
// its visualization (with the nemesis' events) and fails the test with its path. It returns
// the directory of the visualization, "" when the history is linearizable.
func checkLinearizable(t *testing.T, history []porcupine.Operation, events []porcupine.Annotation) string {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(registerModel, history, checkTimeout)
	t.Logf("porcupine: %s for %d operations", res, len(history))
	if res == porcupine.Ok {
		return ""
	}
	info.AddAnnotations(events)
	dir := visualizationDir(t)
	path := filepath.Join(dir, "linearizability.html")
	if err := porcupine.VisualizePath(registerModel, info, path); err != nil {
		t.Errorf("writing the visualization: %v", err)
	}
	if res == porcupine.Illegal {
		t.Errorf("the history is not linearizable: its visualization is %s (the nodes' logs beside it)", path)
		return dir
	}
	t.Errorf("the check did not finish within %v (inconclusive): the history is %s", checkTimeout, path)
	return dir
}
