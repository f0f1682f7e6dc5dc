package console

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// The palette colours bars by shard: shard i gets palette[i % len(palette)] (Tableau 10,
// distinct for the colour-blind in its first few).
var palette = []string{
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
}

// shardColour returns the colour of shard index i.
func shardColour(i int) string {
	if i < 0 {
		return "#999999"
	}
	return palette[i%len(palette)]
}

// The geometry of a bar chart, in SVG user units: the plot area sits inside the margins.
const (
	chartWidth   = 640
	chartHeight  = 220
	marginLeft   = 64
	marginRight  = 12
	marginTop    = 12
	marginBottom = 34
)

// barChart is one metric of a collection's partitions drawn as bars: what the template
// turns into an <svg>.
type barChart struct {
	Metric, Title string
	Width, Height int
	PlotX, PlotY  float64 // the plot area's top left corner
	PlotW, PlotH  float64
	AxisY         float64 // the baseline of the axis' title
	Bars          []bar
	Ticks         []tick
	Legend        []legendItem
	Max           float64
	AllZero       bool
}

// bar is one partition's bar.
type bar struct {
	X, Y, W, H float64
	Fill       string
	Partition  uint64
	Shard      string
	Node       string
	Value      float64
	Label      string // the value as people read it
	TextX      float64
}

// tick is a horizontal grid line with its value.
type tick struct {
	Y     float64
	Label string
}

// legendItem names the colour of one shard.
type legendItem struct {
	Name, Fill string
}

// newBarChart draws metric (value of each partition) over parts, formatting values with
// format.
func newBarChart(metric, title string, parts []Partition, value func(*Partition) float64, format func(float64) string) barChart {
	c := barChart{Metric: metric, Title: title, Width: chartWidth, Height: chartHeight,
		PlotX: marginLeft, PlotY: marginTop, PlotW: chartWidth - marginLeft - marginRight,
		PlotH: chartHeight - marginTop - marginBottom, AxisY: chartHeight - 4}
	for i := range parts {
		c.Max = max(c.Max, value(&parts[i]))
	}
	top := niceCeil(c.Max)
	c.AllZero = c.Max == 0
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		c.Ticks = append(c.Ticks, tick{Y: c.PlotY + c.PlotH - c.PlotH*v/top, Label: format(v)})
	}
	n := max(len(parts), 1)
	slot := c.PlotW / float64(n)
	gap := math.Min(slot*0.2, 8)
	seen := map[string]bool{}
	for i := range parts {
		p := &parts[i]
		v := value(p)
		h := c.PlotH * v / top
		if v > 0 && h < 1 {
			h = 1 // a partition holding something never looks empty
		}
		x := c.PlotX + slot*float64(i) + gap/2
		c.Bars = append(c.Bars, bar{X: x, Y: c.PlotY + c.PlotH - h, W: slot - gap, H: h,
			Fill: shardColour(p.ShardIndex), Partition: p.ID, Shard: p.Shard, Node: p.Node,
			Value: v, Label: format(v), TextX: x + (slot-gap)/2})
		if !seen[p.Shard] {
			seen[p.Shard] = true
			name := p.Shard
			if p.Node != "" {
				name += " (" + p.Node + ")"
			}
			c.Legend = append(c.Legend, legendItem{Name: name, Fill: shardColour(p.ShardIndex)})
		}
	}
	slices.SortFunc(c.Legend, func(a, b legendItem) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return c
}

// niceCeil returns the smallest of 1, 2, 2.5, 5 times a power of ten at or above v (1 for
// v <= 0), the top of an axis that reads well.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// formatBytes prints a size with a binary unit: 512 B, 1.5 KiB, 20 MiB.
func formatBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 || v >= 100 {
		return fmt.Sprintf("%.0f %s", v, units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// formatCount prints a count with k and M past a thousand.
func formatCount(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// timeline is the splits, merges and moves of a period drawn on a time axis.
type timeline struct {
	Width, Height int
	PlotX, PlotW  float64
	Marks         []mark
	From, To      string // the axis' ends, as clock times
	Empty         bool
}

// mark is one event on a timeline.
type mark struct {
	X, Y  float64
	Fill  string
	Kind  string
	Title string
}

// kindRow places each kind of event on its own row, with its colour.
var kindRow = map[string]struct {
	y    float64
	fill string
}{
	"split": {20, "#4e79a7"}, "merge": {44, "#59a14f"}, "move": {68, "#e15759"},
}

// newTimeline draws events over the period from their first to now (at least a minute).
func newTimeline(events []Event, now time.Time) timeline {
	t := timeline{Width: chartWidth, Height: 96, PlotX: marginLeft, PlotW: chartWidth - marginLeft - marginRight,
		Empty: len(events) == 0}
	from := now.Add(-time.Minute)
	if len(events) > 0 && events[0].Time.Before(from) {
		from = events[0].Time
	}
	span := now.Sub(from).Seconds()
	t.From, t.To = from.UTC().Format("15:04:05"), now.UTC().Format("15:04:05")
	for _, e := range events {
		row := kindRow[e.Kind]
		x := t.PlotX + t.PlotW*e.Time.Sub(from).Seconds()/span
		t.Marks = append(t.Marks, mark{X: x, Y: row.y, Fill: row.fill, Kind: e.Kind,
			Title: e.Time.UTC().Format("15:04:05.000") + " " + e.Kind + " " + e.NS + " " + e.Detail})
	}
	return t
}
