package integration

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// consoleGet GETs path from the server's HTTP listener, with basic authentication when
// user is given ("name", "password"), and returns the status and body.
func consoleGet(t *testing.T, s *server, path string, user ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.httpAddr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(user) == 2 {
		req.SetBasicAuth(user[0], user[1])
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(body), resp.Header
}

// TestConsoleProbes reads /healthz and /readyz of a single node: both answer 200 once it
// serves, and the console's pages list a collection created through the driver.
func TestConsoleProbes(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	db := dbName(t)
	shardColl(t, c, db+".people", "region", bson.E{Key: "numInitialChunks", Value: 3})
	if code, body, _ := consoleGet(t, srv, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q, want 200 ok", code, body)
	}
	if code, body, _ := consoleGet(t, srv, "/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz: %d %q, want 200 ready", code, body)
	}
	code, body, hdr := consoleGet(t, srv, "/")
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		t.Fatalf("/: %d %s", code, hdr.Get("Content-Type"))
	}
	if want := `href="/collections/` + db + `/people"`; !strings.Contains(body, want) {
		t.Errorf("the overview does not link %s.people (%s):\n%s", db, want, body)
	}
	if code, _, _ := consoleGet(t, srv, "/collections/"+db+"/nope"); code != http.StatusNotFound {
		t.Errorf("a collection that does not exist: %d, want 404", code)
	}
}

// TestConsoleAuth starts a server with --auth: the console's pages answer 401 (with a
// basic-authentication challenge) without credentials or with a wrong password, 403 to a
// user who lacks the cluster's privileges, and 200 to root; the probes need no credentials.
func TestConsoleAuth(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t, "root", "rootpw")
	root := asUser(t, srv, "root", "rootpw", "", "")
	ctx := context.Background()
	for _, cmd := range []bson.D{
		{{Key: "createUser", Value: "reader"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"readAnyDatabase"}}},
		{{Key: "createUser", Value: "ops"}, {Key: "pwd", Value: "opspw"}, {Key: "roles", Value: bson.A{"clusterAdmin"}}},
	} {
		if err := root.Database("admin").RunCommand(ctx, cmd).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	for _, tc := range []struct {
		name, path string
		user       []string
		want       int
	}{
		{"NoCredentials", "/", nil, http.StatusUnauthorized},
		{"NoCredentialsCollection", "/collections/admin/x", nil, http.StatusUnauthorized},
		{"WrongPassword", "/", []string{"root", "nope"}, http.StatusUnauthorized},
		{"UnknownUser", "/slow", []string{"nobody", "pw"}, http.StatusUnauthorized},
		{"ReaderLacksPrivileges", "/", []string{"reader", "pw"}, http.StatusForbidden},
		{"Root", "/", []string{"root", "rootpw"}, http.StatusOK},
		{"ClusterAdmin", "/nodes", []string{"ops", "opspw"}, http.StatusOK},
		{"ClusterAdminWithDB", "/slow", []string{"ops@admin", "opspw"}, http.StatusOK},
		{"Healthz", "/healthz", nil, http.StatusOK},
		{"Readyz", "/readyz", nil, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, hdr := consoleGet(t, srv, tc.path, tc.user...)
			if code != tc.want {
				t.Fatalf("GET %s as %v: %d, want %d", tc.path, tc.user, code, tc.want)
			}
			if code == http.StatusUnauthorized && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("401 without a Basic challenge: %q", hdr.Get("WWW-Authenticate"))
			}
		})
	}
}

// TestConsoleSlowOps lowers slowms to 0 with the profile command: the commands that follow
// appear on the console's slow-operations page with their namespace.
func TestConsoleSlowOps(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	if err := db.RunCommand(ctx, bson.D{{Key: "profile", Value: 0}, {Key: "slowms", Value: 0}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("events").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("events").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	reads := []struct {
		cmd  bson.D
		name string
		plan string
	}{
		{bson.D{{Key: "find", Value: "events"}, {Key: "filter", Value: bson.D{{Key: "x", Value: 1}}}}, "find", "IXSCAN { x: 1 }"},
		{bson.D{{Key: "count", Value: "events"}, {Key: "query", Value: bson.D{{Key: "y", Value: 1}}}}, "count", "COLLSCAN"},
		{bson.D{{Key: "aggregate", Value: "events"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "_id", Value: 1}}}}}},
			{Key: "cursor", Value: bson.D{}}}, "aggregate", "IDHACK"},
		{bson.D{{Key: "update", Value: "events"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "x", Value: 1}}},
			{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 2}}}}}}}}}, "update", "IXSCAN { x: 1 }"},
		{bson.D{{Key: "delete", Value: "events"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 7}}},
			{Key: "limit", Value: 1}}}}}, "delete", "IDHACK"},
		{bson.D{{Key: "findAndModify", Value: "events"}, {Key: "query", Value: bson.D{{Key: "z", Value: 1}}},
			{Key: "update", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "w", Value: 1}}}}}}, "findAndModify", "COLLSCAN"},
	}
	for _, rd := range reads {
		if err := db.RunCommand(ctx, rd.cmd).Err(); err != nil {
			t.Fatal(err)
		}
	}
	code, body, _ := consoleGet(t, srv, "/slow")
	if code != http.StatusOK || !strings.Contains(body, "<td>insert</td><td>"+db.Name()+".events</td>") {
		t.Fatalf("/slow: %d, want the insert into %s.events listed:\n%s", code, db.Name(), body)
	}
	for _, rd := range reads {
		// The row: command, namespace, plan summary, milliseconds, request charge (> 0).
		row := regexp.MustCompile(`<td>` + rd.name + `</td><td>` + regexp.QuoteMeta(db.Name()) + `\.events</td><td><code>` +
			regexp.QuoteMeta(rd.plan) + `</code></td><td class="num">[0-9.,]+</td><td class="num">([0-9.,]*[1-9][0-9.,]*)</td>`)
		if !row.MatchString(body) {
			t.Errorf("/slow: no %s of %s.events with plan %q and a request charge:\n%s", rd.name, db.Name(), rd.plan, body)
		}
	}
}

// consoleEvents matches an event on a console timeline.
var consoleEvents = regexp.MustCompile(`<circle class="event" data-kind="(split|merge|move)"`)

// TestConsoleEvents raises a collection's throughput past what its partitions serve (they
// split, as many times as partitions are added) and moves one of its partitions to the other shard: the collection's page draws
// the splits and the move on its timeline and lists them, and the overview's counters have
// them.
func TestConsoleEvents(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	create := bson.D{{Key: "customAction", Value: "CreateCollection"}, {Key: "collection", Value: "orders"},
		{Key: "shardKey", Value: "customer"}, {Key: "offerThroughput", Value: 10000}}
	if err := db.RunCommand(ctx, create).Err(); err != nil {
		t.Fatal(err)
	}
	before := numPartitions(t, db, "orders")
	update := bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "orders"},
		{Key: "offerThroughput", Value: 40000}}
	if err := db.RunCommand(ctx, update).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "orders to split into four partitions", func() bool { return numPartitions(t, db, "orders") >= 4 })
	moveChunkTo(t, c, db.Name()+".orders", "customer", "shard-0", "shard-1")

	_, page, _ := consoleGet(t, srv, "/collections/"+db.Name()+"/orders")
	kinds := map[string]int{}
	for _, m := range consoleEvents.FindAllStringSubmatch(page, -1) {
		kinds[m[1]]++
	}
	if splits := numPartitions(t, db, "orders") - before; kinds["split"] != splits || kinds["move"] != 1 {
		t.Errorf("the timeline shows %v, want %d splits (%d partitions into %d) and a move:\n%s", kinds, splits, before, before+splits, page)
	}
	if !strings.Contains(page, "<td>move</td><td>"+db.Name()+".orders</td><td>shard-0</td><td>shard-1</td>") {
		t.Errorf("the events table does not list the move from shard-0 to shard-1:\n%s", page)
	}
	_, page, _ = consoleGet(t, srv, "/")
	if !regexp.MustCompile(`<tr><td class="num">2</td><td class="num">[1-9]\d*</td><td class="num">\d+</td><td class="num">[1-9]`).MatchString(page) {
		t.Errorf("the overview's manager counters do not show 2 shards, splits and a move:\n%s", page)
	}
}
