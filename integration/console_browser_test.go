package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// chromiumPath returns the headless browser the console's browser test drives: Debian's
// chromium, which `make test` installs (make browser-deps); "" when there is none.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// chartBar is one <rect> of a console chart, as the browser's DOM has it.
type chartBar struct {
	Partition int64   `json:"partition"`
	Shard     string  `json:"shard"`
	Value     float64 `json:"value"`
	Height    float64 `json:"height"`
	Fill      string  `json:"fill"`
}

// readBarsJS collects the bars of the chart of metric %q from the DOM.
const readBarsJS = `Array.from(document.querySelectorAll('svg.chart[data-metric=%q] rect.bar')).map(r => ({
	partition: Number(r.dataset.partition), shard: r.dataset.shard, value: Number(r.dataset.value),
	height: r.height.baseVal.value, fill: r.getAttribute('fill')}))`

// partitionRow is one partition of partitionStats.
type partitionRow struct {
	ID        int64  `bson:"id"`
	Shard     string `bson:"shard"`
	Documents int64  `bson:"documents"`
	Bytes     int64  `bson:"bytes"`
}

// TestConsoleBrowserPartitionChart opens the console in headless Chromium on a server of two
// shards holding a collection with a skewed shard key and a balanced one, four partitions
// each, and reads the storage and document charts from the page's DOM: one bar per
// partition, in hash order, carrying the bytes and documents partitionStats reports and
// coloured by shard; the skewed collection's hot partition towers over the others, the
// balanced one's bars are level. The screenshot goes to $CLEAVE_TEST_LOGS (or the test's
// temporary directory) and its path to the log.
func TestConsoleBrowserPartitionChart(t *testing.T) {
	t.Parallel()
	browser := chromiumPath()
	if browser == "" {
		t.Skip("no chromium on this machine: `make test` installs Debian's (apt-get install -y chromium), which this test drives")
	}
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	db := c.Database(dbName(t))
	loadSkewedAndBalanced(t, db)

	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 1800))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	bctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
	defer cancel()

	for _, coll := range []string{"skewed", "balanced"} {
		url := "http://" + srv.httpAddr + "/collections/" + db.Name() + "/" + coll
		var bytesBars, docBars []chartBar
		var parts []partitionRow
		// The statistics the page shows are read when it renders: compare with
		// partitionStats read just before, again if a split came between.
		waitFor(t, time.Minute, coll+"'s chart to show partitionStats' figures", func() bool {
			parts = partitionRows(t, db, coll)
			err := chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitVisible(`svg.chart[data-metric="bytes"]`))
			if err != nil {
				t.Fatalf("loading %s in chromium: %v", url, err)
			}
			if bytesBars, err = chromedp.Run(bctx, chromedp.Evaluate[[]chartBar](fmt.Sprintf(readBarsJS, "bytes"))); err != nil {
				t.Fatalf("reading the storage chart: %v", err)
			}
			if docBars, err = chromedp.Run(bctx, chromedp.Evaluate[[]chartBar](fmt.Sprintf(readBarsJS, "documents"))); err != nil {
				t.Fatalf("reading the documents chart: %v", err)
			}
			return barsMatch(parts, bytesBars, docBars)
		})
		if len(parts) != 4 {
			t.Fatalf("%s has %d partitions, want 4 (40,000 RU/s at 10,000 per partition)", coll, len(parts))
		}
		checkBarColours(t, coll, bytesBars)
		if coll == "skewed" {
			checkSkewed(t, bytesBars)
		} else {
			checkLevel(t, bytesBars)
		}
		screenshot(bctx, t, url, coll)
	}
}

// loadSkewedAndBalanced creates db's collections skewed and balanced, sharded on hashed k at
// 40,000 RU/s (four partitions), and inserts 2,000 documents of 200 bytes into each: in
// skewed, 95% under one key; in balanced, each under its own.
func loadSkewedAndBalanced(t *testing.T, db *mongo.Database) {
	t.Helper()
	ctx := context.Background()
	for _, coll := range []string{"skewed", "balanced"} {
		cmd := bson.D{{Key: "create", Value: coll}, {Key: "shardKey", Value: bson.D{{Key: "k", Value: "hashed"}}},
			{Key: "offerThroughput", Value: 40000}}
		if err := db.RunCommand(ctx, cmd).Err(); err != nil {
			t.Fatalf("create %s: %v", coll, err)
		}
		docs := make([]any, 2000)
		for i := range docs {
			k := fmt.Sprintf("key-%d", i)
			if coll == "skewed" && i%20 != 0 {
				k = "hot"
			}
			docs[i] = bson.D{{Key: "k", Value: k}, {Key: "pad", Value: strings.Repeat("x", 200)}}
		}
		for i := 0; i < len(docs); i += 500 {
			if _, err := db.Collection(coll).InsertMany(ctx, docs[i:i+500]); err != nil {
				t.Fatalf("insert into %s: %v", coll, err)
			}
		}
	}
}

// partitionRows returns coll's partitions as the partitionStats command reports them.
func partitionRows(t *testing.T, db *mongo.Database, coll string) []partitionRow {
	t.Helper()
	var res struct {
		Partitions []partitionRow `bson:"partitions"`
	}
	if err := db.RunCommand(context.Background(), bson.D{{Key: "partitionStats", Value: coll}}).Decode(&res); err != nil {
		t.Fatalf("partitionStats %s: %v", coll, err)
	}
	return res.Partitions
}

// barsMatch reports whether the storage and document charts hold one bar per partition of
// parts, in order, with its shard, bytes and documents.
func barsMatch(parts []partitionRow, bytesBars, docBars []chartBar) bool {
	if len(bytesBars) != len(parts) || len(docBars) != len(parts) {
		return false
	}
	for i, p := range parts {
		b, d := bytesBars[i], docBars[i]
		if b.Partition != p.ID || d.Partition != p.ID || b.Shard != p.Shard || b.Value != float64(p.Bytes) ||
			d.Value != float64(p.Documents) || (p.Bytes > 0) != (b.Height > 0) {
			return false
		}
	}
	return true
}

// checkBarColours checks that bars share a colour exactly when they share a shard.
func checkBarColours(t *testing.T, coll string, bars []chartBar) {
	t.Helper()
	for _, a := range bars {
		for _, b := range bars {
			if (a.Shard == b.Shard) != (a.Fill == b.Fill) {
				t.Errorf("%s: partition %d (%s, %s) and %d (%s, %s): one colour per shard", coll,
					a.Partition, a.Shard, a.Fill, b.Partition, b.Shard, b.Fill)
			}
		}
	}
}

// checkSkewed checks that one bar, the hot key's partition, is over five times as tall as
// each of the others.
func checkSkewed(t *testing.T, bars []chartBar) {
	t.Helper()
	top := 0
	for i, b := range bars {
		if b.Height > bars[top].Height {
			top = i
		}
	}
	for i, b := range bars {
		if i != top && b.Height*5 > bars[top].Height {
			t.Errorf("skewed: partition %d's bar (%.1f) is not dwarfed by the hot partition %d's (%.1f): %+v",
				b.Partition, b.Height, bars[top].Partition, bars[top].Height, bars)
		}
	}
}

// checkLevel checks that every bar is within half of their mean height.
func checkLevel(t *testing.T, bars []chartBar) {
	t.Helper()
	mean := 0.0
	for _, b := range bars {
		mean += b.Height / float64(len(bars))
	}
	for _, b := range bars {
		if b.Height < mean/2 || b.Height > mean*1.5 {
			t.Errorf("balanced: partition %d's bar is %.1f high, the mean %.1f: %+v", b.Partition, b.Height, mean, bars)
		}
	}
}

// screenshot saves the page at url as a PNG in $CLEAVE_TEST_LOGS (or the test's temporary
// directory) and logs where.
func screenshot(ctx context.Context, t *testing.T, url, name string) {
	t.Helper()
	dir := os.Getenv("CLEAVE_TEST_LOGS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil { // as the server logs kept there
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot of %s: %v", url, err)
	}
	path := filepath.Join(dir, t.Name()+"-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("console screenshot of %s: %s", url, path)
}
