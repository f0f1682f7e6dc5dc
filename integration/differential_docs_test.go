package integration

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The documents of the differential test: telemetry readings whose fields carry the values
// that make sharded execution hard. Every generator takes its *rand.Rand, so one seed
// reproduces the whole data set.

// diffMetricTypes are the metricType values: case and accent variants sort apart.
var diffMetricTypes = []string{"temp", "humidity", "pressure", "co2", "voltage", "Temp", "température", "湿度"}

// diffSites are the location.site values.
var diffSites = []string{"berlin", "zürich", "東京", "nyc", "", "Berlin"}

// diffTags are the tags values.
var diffTags = []string{"red", "green", "blue", "ünï", "🙂", "x y"}

// diffReadingKeys are the readings.k values.
var diffReadingKeys = []string{"a", "b", "c", "d"}

// diffNotes are the prefixes of note.
var diffNotes = []string{"ok", "Ok", "ökonomie", "naïve", "日本語", "emoji 🚀", "", "zz"}

// diffEpoch is the earliest ts.
var diffEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// diffNumber returns n as int32, int64 or double, chosen at random: the three compare equal.
func diffNumber(r *rand.Rand, n int64) any {
	switch r.IntN(3) {
	case 0:
		if n == int64(int32(n)) {
			return int32(n)
		}
		return n
	case 1:
		return n
	default:
		return float64(n)
	}
}

// diffDecimal returns a decimal128 with three fraction digits, the last one odd and not 5,
// so that it never equals a double (whose fractions are dyadic) and never has two spellings.
func diffDecimal(r *rand.Rand) bson.Decimal128 {
	last := []int{1, 3, 7, 9}[r.IntN(4)]
	s := fmt.Sprintf("%d.%02d%d", r.IntN(2001)-1000, r.IntN(100), last)
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(err)
	}
	return d
}

// diffDecimalInt returns the decimal128 spelling of the integer n.
func diffDecimalInt(n int64) bson.Decimal128 {
	d, err := bson.ParseDecimal128(fmt.Sprint(n))
	if err != nil {
		panic(err)
	}
	return d
}

// diffDevice returns a deviceId: one of about 300 distinct values (strings, numbers of
// mixed types that compare equal, decimals equal to some of them, NaN, documents, booleans),
// null, or missing (ok false).
func diffDevice(r *rand.Rand) (v any, ok bool) {
	switch p := r.IntN(100); {
	case p < 4:
		return nil, false
	case p < 8:
		return nil, true
	}
	k := r.IntN(297)
	switch {
	case k < 200 && k%37 == 0:
		return fmt.Sprintf("设备-%03d", k), true
	case k < 200 && k%41 == 0:
		return fmt.Sprintf("dév-%03d", k), true
	case k < 200:
		return fmt.Sprintf("dev-%03d", k), true
	case k < 270:
		return diffNumber(r, int64(k-200)*3), true
	case k < 280:
		return float64(k-270) + 0.5, true
	case k < 285:
		return diffNumber(r, 1<<40+int64(k)), true
	case k == 285:
		return math.NaN(), true
	case k < 290:
		return diffDecimalInt(int64(k-286) * 3), true // equals the numbers 0, 3, 6, 9
	case k < 294:
		return bson.D{{Key: "site", Value: diffSites[k%len(diffSites)]}, {Key: "n", Value: int32(k)}}, true
	case k == 294:
		return "", true
	case k == 295:
		return true, true
	default:
		return false, true
	}
}

// diffMetricValue returns a metricValue: mostly numbers of every type with their special
// values, sometimes null, missing (ok false), an array, a string, a document or a boolean.
func diffMetricValue(r *rand.Rand) (v any, ok bool) {
	switch p := r.IntN(1000); {
	case p < 350:
		return int32(r.IntN(2001) - 1000), true
	case p < 450:
		return int64(r.IntN(2_000_001) - 1_000_000), true
	case p < 470:
		return int32(math.MaxInt32 - r.IntN(1000)), true
	case p < 480:
		return int32(math.MinInt32 + r.IntN(1000)), true
	case p < 490:
		return int64(1<<62 + r.IntN(1000)), true
	case p < 740:
		return r.Float64()*2000 - 1000, true
	case p < 780:
		return float64(r.IntN(201) - 100), true
	case p < 785:
		return math.Copysign(0, -1), true
	case p < 795:
		return math.NaN(), true
	case p < 798:
		return math.Inf(1), true
	case p < 800:
		return math.Inf(-1), true
	case p < 850:
		return diffDecimal(r), true
	case p < 890:
		return nil, true
	case p < 930:
		return nil, false
	case p < 975:
		a := bson.A{}
		for range r.IntN(4) {
			v, _ := diffMetricValue(r)
			if _, isArr := v.(bson.A); !isArr {
				a = append(a, v)
			}
		}
		return a, true
	case p < 985:
		return "n/a", true
	case p < 993:
		return bson.D{{Key: "v", Value: int32(r.IntN(10))}}, true
	default:
		return r.IntN(2) == 0, true
	}
}

// diffCounter is an int32 that now and then sits near the int32 limits, so that sums of
// counters cross them in the middle of a group and come back.
func diffCounter(r *rand.Rand) int32 {
	switch r.IntN(20) {
	case 0:
		return math.MaxInt32 - int32(r.IntN(100))
	case 1:
		return math.MinInt32 + int32(r.IntN(100))
	}
	return int32(r.IntN(1000))
}

// diffBytes is an int64 that now and then sits near 2^62, so that sums overflow int64 in
// the middle of a group.
func diffBytes(r *rand.Rand) int64 {
	switch r.IntN(30) {
	case 0:
		return 1<<62 + int64(r.IntN(1000))
	case 1:
		return -(1 << 62) - int64(r.IntN(1000))
	}
	return int64(r.IntN(1 << 20))
}

// diffID returns the unique _id of document i: int32 mostly, and int64, double, string and
// ObjectID, with values no two of which compare equal.
func diffID(r *rand.Rand, i int) any {
	switch p := r.IntN(20); {
	case p < 14:
		return int32(i)
	case p < 16:
		return int64(i) + 1<<33
	case p < 17:
		return float64(i) + 0.25
	case p < 19:
		return fmt.Sprintf("id-%05d", i)
	default:
		var oid bson.ObjectID
		oid[0], oid[10], oid[11] = 0x65, byte(i>>8), byte(i)
		return oid
	}
}

// diffDoc returns document i.
func diffDoc(r *rand.Rand, i int) bson.D {
	d := bson.D{{Key: "_id", Value: diffID(r, i)}, {Key: "seq", Value: int32(i)}}
	if v, ok := diffDevice(r); ok {
		d = append(d, bson.E{Key: "deviceId", Value: v})
	}
	switch p := r.IntN(100); {
	case p < 92:
		d = append(d, bson.E{Key: "metricType", Value: diffMetricTypes[r.IntN(len(diffMetricTypes))]})
	case p < 95:
		d = append(d, bson.E{Key: "metricType", Value: nil})
	case p < 97:
		d = append(d, bson.E{Key: "metricType", Value: int32(r.IntN(3))})
	}
	if v, ok := diffMetricValue(r); ok {
		d = append(d, bson.E{Key: "metricValue", Value: v})
	}
	d = append(d, bson.E{Key: "counter", Value: diffCounter(r)}, bson.E{Key: "bytes", Value: diffBytes(r)})
	if r.IntN(20) != 0 {
		d = append(d, bson.E{Key: "ts", Value: diffEpoch.Add(time.Duration(r.IntN(365*24*60)) * time.Minute)})
	}
	if loc, ok := diffLocation(r); ok {
		d = append(d, bson.E{Key: "location", Value: loc})
	}
	if v, ok := diffReadings(r); ok {
		d = append(d, bson.E{Key: "readings", Value: v})
	}
	switch p := r.IntN(100); {
	case p < 60:
		tags := bson.A{}
		for range r.IntN(4) {
			tags = append(tags, diffTags[r.IntN(len(diffTags))])
		}
		d = append(d, bson.E{Key: "tags", Value: tags})
	case p < 65:
		d = append(d, bson.E{Key: "tags", Value: diffTags[r.IntN(len(diffTags))]})
	}
	status := []any{"ok", "warn", "fail", true, false}[r.IntN(5)]
	note := fmt.Sprintf("%s %d", diffNotes[r.IntN(len(diffNotes))], r.IntN(50))
	return append(d, bson.E{Key: "status", Value: status}, bson.E{Key: "note", Value: note})
}

// diffLocation returns a location: {site, floor, coords: {x, y}}, sometimes without coords,
// null, or missing (ok false).
func diffLocation(r *rand.Rand) (any, bool) {
	switch p := r.IntN(100); {
	case p < 5:
		return nil, true
	case p < 20:
		return nil, false
	}
	loc := bson.D{{Key: "site", Value: diffSites[r.IntN(len(diffSites))]}, {Key: "floor", Value: int32(r.IntN(10))}}
	if r.IntN(4) != 0 {
		loc = append(loc, bson.E{Key: "coords", Value: bson.D{{Key: "x", Value: r.Float64() * 100}, {Key: "y", Value: r.NormFloat64()}}})
	}
	return loc, true
}

// diffReadings returns an array of {k, v, ok} documents, sometimes a single document, or
// missing (ok false).
func diffReadings(r *rand.Rand) (any, bool) {
	switch p := r.IntN(100); {
	case p < 25:
		return nil, false
	case p < 28:
		return diffReading(r), true
	}
	a := bson.A{}
	for range r.IntN(5) {
		a = append(a, diffReading(r))
	}
	return a, true
}

// diffReading returns one reading.
func diffReading(r *rand.Rand) bson.D {
	d := bson.D{{Key: "k", Value: diffReadingKeys[r.IntN(len(diffReadingKeys))]}}
	switch r.IntN(4) {
	case 0:
		d = append(d, bson.E{Key: "v", Value: int32(r.IntN(100))})
	case 1:
		d = append(d, bson.E{Key: "v", Value: r.Float64() * 100})
	case 2:
		d = append(d, bson.E{Key: "v", Value: diffNumber(r, int64(r.IntN(100)))})
	}
	return append(d, bson.E{Key: "ok", Value: r.IntN(3) != 0})
}

// diffDocs returns the n documents of seed.
func diffDocs(seed uint64, n int) []any {
	r := rand.New(rand.NewPCG(seed, 0xd0c5))
	docs := make([]any, n)
	for i := range docs {
		docs[i] = diffDoc(r, i)
	}
	return docs
}
