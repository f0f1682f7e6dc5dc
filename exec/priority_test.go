package exec

import (
	"fmt"
	"testing"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/wire"
)

// insertUntilThrottled inserts documents into app.c on c, one per command with extra fields
// extra (Extended JSON, "" for none), until one is refused with 16500; it fails the test if
// none is within n.
func insertUntilThrottled(t *testing.T, c wire.ConnHandler, prefix, extra string, n int) {
	t.Helper()
	for i := range n {
		reply := authRun(t, c, "app", fmt.Sprintf(`{"insert": "c", "documents": [{"_id": "%s%d"}]%s}`, prefix, i, extra))
		if code, ok := reply.Lookup("writeErrors", "0", "code").Int32OK(); ok {
			if code != 16500 {
				t.Fatalf("insert %d: %s", i, reply)
			}
			return
		}
	}
	t.Fatalf("%d inserts into 400 RU/s were not throttled", n)
}

// throttledCounts returns partitionStats' throttledRequests and throttledLowPriorityRequests
// of app.c's one partition.
func throttledCounts(t *testing.T, c wire.ConnHandler) (all, low int64) {
	t.Helper()
	p := authRun(t, c, "app", `{"partitionStats": "c"}`).Lookup("partitions", "0").Document()
	return p.Lookup("throttledRequests").Int64(), p.Lookup("throttledLowPriorityRequests").Int64()
}

// TestPriorityFromUserCustomData: a user whose customData says priorityLevel "low" runs at
// low priority (its refusals are counted as such), the root user at high; a command's own
// priorityLevel wins over the user's.
func TestPriorityFromUserCustomData(t *testing.T) {
	e := authExecutor(t)
	root := connFrom(e, 1, "127.0.0.1")
	if code := login(t, root, "admin", "root", "rootpw", auth.SCRAMSHA256, false); code != 0 {
		t.Fatalf("login: %d", code)
	}
	wantCode(t, root, "admin", `{"createUser": "batch", "pwd": "pw", "roles": ["root"], "customData": {"priorityLevel": "Low"}}`, 0, "")
	wantCode(t, root, "app", `{"customAction": "CreateCollection", "collection": "c", "offerThroughput": 400}`, 0, "")
	batch := connFrom(e, 2, "127.0.0.1")
	if code := login(t, batch, "admin", "batch", "pw", auth.SCRAMSHA256, false); code != 0 {
		t.Fatalf("login: %d", code)
	}
	insertUntilThrottled(t, batch, "b", "", 500)
	if all, low := throttledCounts(t, root); all != 1 || low != 1 {
		t.Fatalf("after the low-priority user's refusal: throttled %d, of which low %d; want 1 and 1", all, low)
	}
	insertUntilThrottled(t, batch, "h", `, "priorityLevel": "high"`, 500)
	insertUntilThrottled(t, root, "r", "", 500)
	if all, low := throttledCounts(t, root); all != 3 || low != 1 {
		t.Fatalf("after two high-priority refusals: throttled %d, of which low %d; want 3 and 1", all, low)
	}
	reply := authRun(t, batch, "app", `{"find": "c", "priorityLevel": true}`)
	if fpReplyCode(reply) != 2 {
		t.Fatalf("priorityLevel true: %s", reply)
	}
}
