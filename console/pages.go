package console

import (
	"fmt"
	"net/http"
	"time"
)

// overviewData is the overview page: every collection, the manager's counters, the recent
// events and the nodes.
type overviewData struct {
	Title     string
	Databases []Database
	Manager   Manager
	Timeline  timeline
	Events    []Event // newest first, at most 20
	Nodes     []Node
	Ready     string // "" when ready, else what is missing
}

// overview renders the overview page.
func (c *Console) overview(*http.Request) (string, any, int) {
	events := c.src.Events()
	d := overviewData{Title: "cleave", Databases: c.src.Databases(), Manager: c.src.Manager(),
		Timeline: newTimeline(events, time.Now()), Events: newestFirst(events, 20), Nodes: c.src.Nodes()}
	if err := c.src.Ready(); err != nil {
		d.Ready = err.Error()
	}
	return "overview", d, http.StatusOK
}

// collectionData is a collection's page.
type collectionData struct {
	Title    string
	Coll     Collection
	Charts   []barChart
	Timeline timeline
	Events   []Event
	Totals   Partition // the sums of documents, bytes, RU/s, budget and throttled requests
}

// collection renders the page of the collection the path names.
func (c *Console) collection(r *http.Request) (string, any, int) {
	coll, ok := c.src.Collection(r.PathValue("db"), r.PathValue("coll"))
	if !ok {
		return "", nil, http.StatusNotFound
	}
	d := collectionData{Title: coll.DB + "." + coll.Name, Coll: coll}
	parts := coll.Partitions
	d.Charts = []barChart{
		newBarChart("bytes", "Storage per partition", parts, func(p *Partition) float64 { return float64(p.Bytes) }, formatBytes),
		newBarChart("documents", "Documents per partition", parts, func(p *Partition) float64 { return float64(p.Documents) }, formatCount),
		newBarChart("ruPerSec", "RU/s per partition", parts, func(p *Partition) float64 { return p.RUPerSec }, formatRU),
	}
	for _, p := range parts {
		d.Totals.Documents += p.Documents
		d.Totals.Bytes += p.Bytes
		d.Totals.RUPerSec += p.RUPerSec
		d.Totals.BudgetRU += p.BudgetRU
		d.Totals.Throttled += p.Throttled
	}
	var events []Event
	for _, e := range c.src.Events() {
		if e.NS == d.Title {
			events = append(events, e)
		}
	}
	d.Timeline = newTimeline(events, time.Now())
	d.Events = newestFirst(events, 50)
	return "collection", d, http.StatusOK
}

// nodesData is the nodes page.
type nodesData struct {
	Title string
	Nodes []Node
}

// nodes renders the cluster's nodes and the copies of shards each keeps.
func (c *Console) nodes(*http.Request) (string, any, int) {
	return "nodes", nodesData{Title: "nodes", Nodes: c.src.Nodes()}, http.StatusOK
}

// slowData is the slow operations page.
type slowData struct {
	Title string
	Ops   []SlowOp
}

// slow renders the recent slow operations.
func (c *Console) slow(*http.Request) (string, any, int) {
	return "slow", slowData{Title: "slow operations", Ops: c.src.SlowOps()}, http.StatusOK
}

// newestFirst returns the last n of events (oldest first), newest first.
func newestFirst(events []Event, n int) []Event {
	out := make([]Event, 0, min(n, len(events)))
	for i := len(events) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, events[i])
	}
	return out
}

// formatRU prints request units: whole ones past ten, one decimal below.
func formatRU(v float64) string {
	if v >= 10 {
		return formatCount(v)
	}
	return fmt.Sprintf("%.1f", v)
}
