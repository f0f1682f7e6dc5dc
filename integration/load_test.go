package integration

import (
	"bufio"
	"context"
	wirebin "encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Load test sizes: loadConns connections run the mixed workload for loadDuration.
const (
	loadConns = 1000
	// loadSlack is how far goroutines and open files may stay above the baseline once every
	// connection closed: pebble flushes and compacts meanwhile (new tables, its own
	// goroutines); a leak per connection would be ~loadConns.
	loadSlack = 100
)

// loadDuration is how long the workload runs: 10 s in `make test` (every connection runs
// hundreds of rounds, throttled ones included), issue 16's full minute with CLEAVE_LONG=1
// (make load), or CLEAVE_LOAD_DURATION.
var loadDuration = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("CLEAVE_LOAD_DURATION")); err == nil && d > 0 {
		return d
	}
	if os.Getenv("CLEAVE_LONG") != "" {
		return time.Minute
	}
	return 10 * time.Second
}()

// TestLoadConnections opens 1,000 raw connections, each doing a handshake and then a mixed
// workload (inserts, finds by _id, $inc updates, an aggregation every tenth round; one round
// in eight on a collection provisioned at 400 RU/s so that throttling happens) for 10 s
// (loadDuration; a minute in make load).
// Every reply must succeed or fail with 16500 TooManyRequests; afterwards the server still
// answers and, once every connection closed, its connection count, goroutines and open file
// descriptors return to near what they were before. No timing is asserted.
func TestLoadConnections(t *testing.T) {
	t.Parallel()
	raiseFDLimit(t, loadConns+512)
	srv := startServer(t, "--log-level", "warn") // one Info line per command would flood the log buffer
	ctx := context.Background()
	cl := srv.client(t)
	db := cl.Database(dbName(t))
	if err := db.CreateCollection(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("c").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "conn", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "thr"},
		{Key: "offerThroughput", Value: 400}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "conn", Value: 1}}}, {Key: "name", Value: "conn_1"}}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	base := srv.loadSample(t, cl)
	t.Logf("baseline: %s", base)

	stats := &loadStats{}
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	for i := range loadConns {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			runLoadConn(srv.addr, dbName(t), i, &ready, start, stats)
		}()
	}
	ready.Wait()
	idle := srv.loadSample(t, cl)
	t.Logf("%d idle connections: %s (RSS +%.1f MiB)", loadConns, idle, float64(idle.rss-base.rss)/(1<<20))
	// Issue 16's budget for idle connections; the race detector's shadow memory would
	// blow it.
	if grown := idle.rss - base.rss; !raceEnabled && base.rss > 0 && grown > 64<<20 {
		t.Errorf("%d idle connections grew RSS by %.1f MiB, budget 64 MiB", loadConns, float64(grown)/(1<<20))
	}
	if n := stats.dialErrs.Load(); n > 0 {
		t.Errorf("%d of %d connections failed to open or shake hands; first: %s", n, loadConns, stats.first())
	} else if idle.conns < base.conns+loadConns {
		t.Errorf("serverStatus connections.current %d with %d connections open, baseline %d", idle.conns, loadConns, base.conns)
	}

	close(start)
	time.Sleep(loadDuration / 2)
	t.Logf("under load: %s", srv.loadSample(t, cl))
	done.Wait()
	t.Logf("%d requests: %d ok, %d throttled (16500), %d other errors",
		stats.requests.Load(), stats.requests.Load()-stats.throttled.Load()-stats.errs.Load(), stats.throttled.Load(), stats.errs.Load())
	if n := stats.errs.Load(); n > 0 {
		t.Errorf("%d errors other than throttling; first: %s", n, stats.first())
	}
	if stats.requests.Load()-stats.throttled.Load() == 0 {
		t.Error("no request succeeded")
	}

	// The server answers, and its documents are there.
	n, err := db.Collection("c").CountDocuments(ctx, bson.D{})
	if err != nil {
		t.Fatalf("count after the load: %v", err)
	}
	t.Logf("%d documents in c", n)

	// Resources return to near the baseline once the connections closed; the server may
	// take a moment to notice each close, so poll.
	var after loadSample
	for deadline := time.Now().Add(30 * time.Second); ; {
		after = srv.loadSample(t, cl)
		if after.conns <= base.conns && after.goroutines <= base.goroutines+loadSlack && after.fds <= base.fds+loadSlack {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after every connection closed: %s; baseline %s", after, base)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("after: %s", after)
}

// raiseFDLimit makes sure this process may open need files, raising its soft limit toward
// the hard one; it skips the test when the hard limit is lower.
func raiseFDLimit(t *testing.T, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("load test: cannot read the file-descriptor limit: %v", err)
	}
	if lim.Cur >= need {
		return
	}
	if lim.Max < need {
		t.Skipf("load test needs %d file descriptors; the hard limit is %d (raise it with ulimit -Hn)", need, lim.Max)
	}
	lim.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("load test needs %d file descriptors; raising the soft limit failed: %v", need, err)
	}
}

// loadStats counts the workload's requests and failures; firstErr keeps the first failure
// other than throttling.
type loadStats struct {
	requests, throttled, errs, dialErrs atomic.Int64
	mu                                  sync.Mutex
	firstErr                            string
}

// fail records an unexpected failure.
func (s *loadStats) fail(counter *atomic.Int64, msg string) {
	counter.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.firstErr == "" {
		s.firstErr = msg
	}
}

// first returns the first failure recorded.
func (s *loadStats) first() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstErr
}

// runLoadConn opens connection i, shakes hands, reports ready, waits for start and runs
// the workload for loadDuration.
func runLoadConn(addr, db string, i int, ready *sync.WaitGroup, start <-chan struct{}, stats *loadStats) {
	c, err := dialRaw(addr)
	if err == nil {
		var reply bson.Raw
		reply, err = c.run(bson.D{{Key: "hello", Value: 1}, {Key: "helloOk", Value: true},
			{Key: "client", Value: bson.D{{Key: "driver", Value: bson.D{{Key: "name", Value: "cleave-load"}, {Key: "version", Value: "0"}}},
				{Key: "os", Value: bson.D{{Key: "type", Value: "linux"}}}}}, {Key: "$db", Value: "admin"}})
		if err == nil && !replyOK(reply) {
			err = fmt.Errorf("hello: %s", reply)
		}
	}
	ready.Done()
	if err != nil {
		stats.fail(&stats.dialErrs, fmt.Sprintf("conn %d: %v", i, err))
		return
	}
	defer func() { _ = c.conn.Close() }()
	<-start
	r := rand.New(rand.NewPCG(uint64(i), 1))
	for n, end := 0, time.Now().Add(loadDuration); time.Now().Before(end); n++ {
		coll := "c"
		if r.IntN(8) == 0 {
			coll = "thr"
		}
		id := int64(i)<<32 | int64(n)
		cmds := []bson.D{
			{{Key: "insert", Value: coll}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}, {Key: "conn", Value: i}, {Key: "n", Value: n}, {Key: "pad", Value: strings.Repeat("x", 100)}}}}},
			{{Key: "find", Value: coll}, {Key: "filter", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "limit", Value: 1}, {Key: "singleBatch", Value: true}},
			{{Key: "update", Value: coll}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}}}}},
		}
		if n%10 == 9 {
			cmds = append(cmds, bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: bson.A{
				bson.D{{Key: "$match", Value: bson.D{{Key: "conn", Value: i}}}},
				bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "s", Value: bson.D{{Key: "$sum", Value: "$n"}}}}}}}},
				{Key: "cursor", Value: bson.D{}}})
		}
		for _, cmd := range cmds {
			cmd = append(cmd, bson.E{Key: "$db", Value: db})
			stats.requests.Add(1)
			reply, err := c.run(cmd)
			if err != nil {
				stats.fail(&stats.errs, fmt.Sprintf("conn %d %s: %v", i, cmd[0].Key, err))
				return // the connection is unusable
			}
			switch code := replyCode(reply); code {
			case 0:
			case 16500:
				stats.throttled.Add(1)
			default:
				stats.fail(&stats.errs, fmt.Sprintf("conn %d %s: %s", i, cmd[0].Key, reply))
			}
		}
	}
}

// replyOK reports whether a reply has ok: 1.
func replyOK(reply bson.Raw) bool {
	ok, _ := reply.Lookup("ok").AsFloat64OK()
	return ok == 1
}

// replyCode is a reply's error code: the command's, else the first write error's other than
// 16500, else 16500 if a write was throttled, else 0.
func replyCode(reply bson.Raw) int32 {
	if !replyOK(reply) {
		code, _ := reply.Lookup("code").AsInt64OK()
		return int32(code)
	}
	var throttled bool
	wes, _ := reply.Lookup("writeErrors").ArrayOK()
	vals, _ := wes.Values()
	for _, v := range vals {
		we, _ := v.DocumentOK()
		code, _ := we.Lookup("code").AsInt64OK()
		if code != 16500 {
			return int32(code)
		}
		throttled = true
	}
	if throttled {
		return 16500
	}
	return 0
}

// rawConn is a connection speaking OP_MSG by hand: the driver's pools and monitors would
// multiply the connections and goroutines this test counts.
type rawConn struct {
	conn  net.Conn
	r     *bufio.Reader
	reqID int32
}

// dialRaw connects to addr.
func dialRaw(addr string) (*rawConn, error) {
	c, err := net.DialTimeout("tcp", addr, time.Minute)
	if err != nil {
		return nil, err
	}
	return &rawConn{conn: c, r: bufio.NewReader(c)}, nil
}

// run sends cmd as an OP_MSG and returns the reply's body.
func (c *rawConn) run(cmd bson.D) (bson.Raw, error) {
	body, err := bson.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	c.reqID++
	msg := make([]byte, 0, 21+len(body))
	msg = wirebin.LittleEndian.AppendUint32(msg, uint32(21+len(body)))
	msg = wirebin.LittleEndian.AppendUint32(msg, uint32(c.reqID))
	msg = wirebin.LittleEndian.AppendUint32(msg, 0)
	msg = wirebin.LittleEndian.AppendUint32(msg, 2013) // OP_MSG
	msg = wirebin.LittleEndian.AppendUint32(msg, 0)    // flagBits
	msg = append(msg, 0)                               // section kind 0: the body
	msg = append(msg, body...)
	// NB: a deadline, not a timing assertion: a server that stops answering fails the test
	// instead of hanging it.
	_ = c.conn.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := c.conn.Write(msg); err != nil {
		return nil, err
	}
	reply, err := readWireMessage(c.r)
	if err != nil {
		return nil, err
	}
	if len(reply) < 21 || wirebin.LittleEndian.Uint32(reply[12:]) != 2013 || reply[20] != 0 {
		return nil, fmt.Errorf("unexpected reply %x", reply[:min(len(reply), 32)])
	}
	return bson.Raw(reply[21:]), nil
}

// loadSample is the server's resource use at one moment.
type loadSample struct {
	conns                int64 // serverStatus connections.current
	goroutines, fds, rss int64 // go_goroutines; /proc/<pid>/fd entries (else process_open_fds); VmRSS bytes
}

func (s loadSample) String() string {
	return fmt.Sprintf("connections %d, goroutines %d, open files %d, RSS %.1f MiB", s.conns, s.goroutines, s.fds, float64(s.rss)/(1<<20))
}

// loadSample reads serverStatus through cl, /metrics and /proc.
func (s *server) loadSample(t *testing.T, cl *mongo.Client) loadSample {
	t.Helper()
	var st struct {
		Connections struct {
			Current int64 `bson:"current"`
		} `bson:"connections"`
	}
	if err := cl.Database("admin").RunCommand(context.Background(), bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatalf("serverStatus: %v", err)
	}
	fams := scrape(t, s)
	g, _ := metricSum(fams, "go_goroutines", nil)
	fds, _ := metricSum(fams, "process_open_fds", nil)
	out := loadSample{conns: st.Connections.Current, goroutines: int64(g), fds: int64(fds)}
	pid := strconv.Itoa(s.cmd.Process.Pid)
	if ents, err := os.ReadDir("/proc/" + pid + "/fd"); err == nil {
		out.fds = int64(len(ents))
	}
	if b, err := os.ReadFile("/proc/" + pid + "/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				out.rss = kb << 10
			}
		}
	}
	return out
}
