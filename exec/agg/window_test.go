package agg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// runStageCases runs table cases through runPipeline and compares documents byte for byte
// (types and field order included) or error codes.
func runStageCases(t *testing.T, cases []aggCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runPipeline(t, tc.input, tc.pipeline)
			if tc.code != 0 {
				var me *mongoerr.Error
				if !errors.As(err, &me) || me.Code != tc.code {
					t.Fatalf("want error %d, got %v (results %v)", tc.code, err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d documents, want %d:\n%s", len(got), len(tc.want), stageDocsString(got))
			}
			for i, w := range tc.want {
				if want := streamtest.ExtDoc(t, w); !bytes.Equal(got[i], want) {
					t.Errorf("document %d:\n got %s\nwant %s", i, got[i], bsoncore.Document(want))
				}
			}
		})
	}
}

// stageDocsString prints documents one per line.
func stageDocsString(docs []bsoncore.Document) string {
	var b strings.Builder
	for _, d := range docs {
		fmt.Fprintln(&b, d.String())
	}
	return b.String()
}

// fxCakeSales is the collection of MongoDB's $setWindowFields documentation examples.
var fxCakeSales = []string{
	`{"_id": 0, "type": "chocolate", "orderDate": {"$date": "2020-05-18T14:10:30Z"}, "state": "CA", "price": 13, "quantity": 120}`,
	`{"_id": 1, "type": "chocolate", "orderDate": {"$date": "2021-03-20T11:30:05Z"}, "state": "WA", "price": 14, "quantity": 140}`,
	`{"_id": 2, "type": "vanilla", "orderDate": {"$date": "2021-01-11T06:31:15Z"}, "state": "CA", "price": 12, "quantity": 145}`,
	`{"_id": 3, "type": "vanilla", "orderDate": {"$date": "2020-02-08T13:13:23Z"}, "state": "WA", "price": 13, "quantity": 104}`,
	`{"_id": 4, "type": "strawberry", "orderDate": {"$date": "2019-05-18T16:09:01Z"}, "state": "CA", "price": 41, "quantity": 162}`,
	`{"_id": 5, "type": "strawberry", "orderDate": {"$date": "2019-01-08T06:12:03Z"}, "state": "WA", "price": 43, "quantity": 134}`,
}

// fxStockPrices is the collection of the $expMovingAvg documentation examples.
var fxStockPrices = []string{
	`{"_id": 1, "stock": "MDB", "date": {"$date": "2020-05-18T20:00:00Z"}, "price": 13}`,
	`{"_id": 2, "stock": "MDB", "date": {"$date": "2020-05-19T20:00:00Z"}, "price": 15.4}`,
	`{"_id": 3, "stock": "MDB", "date": {"$date": "2020-05-20T20:00:00Z"}, "price": 12}`,
	`{"_id": 4, "stock": "MDB", "date": {"$date": "2020-05-21T20:00:00Z"}, "price": 11.7}`,
	`{"_id": 5, "stock": "MSFT", "date": {"$date": "2020-05-18T20:00:00Z"}, "price": 82}`,
	`{"_id": 6, "stock": "MSFT", "date": {"$date": "2020-05-19T20:00:00Z"}, "price": 94}`,
	`{"_id": 7, "stock": "MSFT", "date": {"$date": "2020-05-20T20:00:00Z"}, "price": 112}`,
	`{"_id": 8, "stock": "MSFT", "date": {"$date": "2020-05-21T20:00:00Z"}, "price": 97.3}`,
}

// fxDeliveryFleet is the collection of the $derivative documentation example.
var fxDeliveryFleet = []string{
	`{"_id": 1, "truckID": "1", "timeStamp": {"$date": "2020-05-18T14:10:30Z"}, "miles": 1295.1}`,
	`{"_id": 2, "truckID": "1", "timeStamp": {"$date": "2020-05-18T14:11:00Z"}, "miles": 1295.63}`,
	`{"_id": 3, "truckID": "1", "timeStamp": {"$date": "2020-05-18T14:11:30Z"}, "miles": 1296.25}`,
	`{"_id": 4, "truckID": "1", "timeStamp": {"$date": "2020-05-18T14:12:00Z"}, "miles": 1296.76}`,
	`{"_id": 5, "truckID": "2", "timeStamp": {"$date": "2020-05-18T14:10:30Z"}, "miles": 10234.1}`,
	`{"_id": 6, "truckID": "2", "timeStamp": {"$date": "2020-05-18T14:11:00Z"}, "miles": 10234.33}`,
	`{"_id": 7, "truckID": "2", "timeStamp": {"$date": "2020-05-18T14:11:30Z"}, "miles": 10234.73}`,
	`{"_id": 8, "truckID": "2", "timeStamp": {"$date": "2020-05-18T14:12:00Z"}, "miles": 10235.13}`,
}

// fxPowerConsumption is the collection of the $integral documentation example.
var fxPowerConsumption = []string{
	`{"_id": 1, "powerMeterID": "1", "timeStamp": {"$date": "2020-05-18T14:10:30Z"}, "kilowatts": 2.95}`,
	`{"_id": 2, "powerMeterID": "1", "timeStamp": {"$date": "2020-05-18T14:11:00Z"}, "kilowatts": 2.7}`,
	`{"_id": 3, "powerMeterID": "1", "timeStamp": {"$date": "2020-05-18T14:11:30Z"}, "kilowatts": 2.6}`,
	`{"_id": 4, "powerMeterID": "1", "timeStamp": {"$date": "2020-05-18T14:12:00Z"}, "kilowatts": 2.98}`,
	`{"_id": 5, "powerMeterID": "2", "timeStamp": {"$date": "2020-05-18T14:10:30Z"}, "kilowatts": 2.5}`,
	`{"_id": 6, "powerMeterID": "2", "timeStamp": {"$date": "2020-05-18T14:11:00Z"}, "kilowatts": 2.25}`,
	`{"_id": 7, "powerMeterID": "2", "timeStamp": {"$date": "2020-05-18T14:11:30Z"}, "kilowatts": 2.75}`,
	`{"_id": 8, "powerMeterID": "2", "timeStamp": {"$date": "2020-05-18T14:12:00Z"}, "kilowatts": 2.82}`,
}

// fxHourlyStock is the collection of the $linearFill and $locf documentation examples.
var fxHourlyStock = []string{
	`{"_id": 1, "time": {"$date": "2021-03-08T09:00:00Z"}, "price": 500}`,
	`{"_id": 2, "time": {"$date": "2021-03-08T10:00:00Z"}}`,
	`{"_id": 3, "time": {"$date": "2021-03-08T11:00:00Z"}, "price": 515}`,
	`{"_id": 4, "time": {"$date": "2021-03-08T12:00:00Z"}}`,
	`{"_id": 5, "time": {"$date": "2021-03-08T13:00:00Z"}}`,
	`{"_id": 6, "time": {"$date": "2021-03-08T14:00:00Z"}, "price": 485}`,
}

// windowCases come from MongoDB's documentation of $setWindowFields and its operators.
var windowCases = []aggCase{
	{name: "CumulativeQuantityForState", input: fxCakeSales,
		pipeline: `[{"$setWindowFields": {"partitionBy": "$state", "sortBy": {"orderDate": 1},
			"output": {"cumulativeQuantityForState": {"$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}}}}},
			{"$project": {"cumulativeQuantityForState": 1}}]`,
		want: []string{`{"_id": 4, "cumulativeQuantityForState": 162}`, `{"_id": 0, "cumulativeQuantityForState": 282}`,
			`{"_id": 2, "cumulativeQuantityForState": 427}`, `{"_id": 5, "cumulativeQuantityForState": 134}`,
			`{"_id": 3, "cumulativeQuantityForState": 238}`, `{"_id": 1, "cumulativeQuantityForState": 378}`}},
	{name: "WholeDocumentOutput", input: fxCakeSales[:1],
		pipeline: `[{"$setWindowFields": {"partitionBy": "$state", "sortBy": {"orderDate": 1},
			"output": {"n": {"$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}}}}}]`,
		want: []string{`{"_id": 0, "type": "chocolate", "orderDate": {"$date": "2020-05-18T14:10:30Z"}, "state": "CA", "price": 13, "quantity": 120, "n": 120}`}},
	{name: "CumulativeAndMaxForYear", input: fxCakeSales,
		pipeline: `[{"$setWindowFields": {"partitionBy": {"$year": "$orderDate"}, "sortBy": {"orderDate": 1},
			"output": {"cum": {"$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}},
				"max": {"$max": "$quantity", "window": {"documents": ["unbounded", "unbounded"]}}}}},
			{"$project": {"cum": 1, "max": 1}}]`,
		want: []string{`{"_id": 5, "cum": 134, "max": 162}`, `{"_id": 4, "cum": 296, "max": 162}`,
			`{"_id": 3, "cum": 104, "max": 120}`, `{"_id": 0, "cum": 224, "max": 120}`,
			`{"_id": 2, "cum": 145, "max": 145}`, `{"_id": 1, "cum": 285, "max": 145}`}},
	{name: "MovingAverage", input: fxCakeSales,
		pipeline: `[{"$setWindowFields": {"partitionBy": {"$year": "$orderDate"}, "sortBy": {"orderDate": 1},
			"output": {"avg": {"$avg": "$quantity", "window": {"documents": [-1, 0]}}}}}, {"$project": {"avg": 1}}]`,
		want: []string{`{"_id": 5, "avg": 134.0}`, `{"_id": 4, "avg": 148.0}`, `{"_id": 3, "avg": 104.0}`,
			`{"_id": 0, "avg": 112.0}`, `{"_id": 2, "avg": 145.0}`, `{"_id": 1, "avg": 142.5}`}},
	{name: "RangeWindow", input: fxCakeSales,
		pipeline: `[{"$setWindowFields": {"partitionBy": "$state", "sortBy": {"price": 1},
			"output": {"similar": {"$sum": "$quantity", "window": {"range": [-10, 10]}}}}}, {"$project": {"similar": 1}}]`,
		want: []string{`{"_id": 2, "similar": 265}`, `{"_id": 0, "similar": 265}`, `{"_id": 4, "similar": 162}`,
			`{"_id": 3, "similar": 244}`, `{"_id": 1, "similar": 244}`, `{"_id": 5, "similar": 134}`}},
	{name: "TimeRangePositive", input: fxCakeSales,
		pipeline: `[{"$setWindowFields": {"partitionBy": "$state", "sortBy": {"orderDate": 1},
			"output": {"recent": {"$push": "$orderDate", "window": {"range": ["unbounded", 10], "unit": "month"}}}}},
			{"$project": {"recent": 1}}]`,
		want: []string{`{"_id": 4, "recent": [{"$date": "2019-05-18T16:09:01Z"}]}`,
			`{"_id": 0, "recent": [{"$date": "2019-05-18T16:09:01Z"}, {"$date": "2020-05-18T14:10:30Z"}, {"$date": "2021-01-11T06:31:15Z"}]}`,
			`{"_id": 2, "recent": [{"$date": "2019-05-18T16:09:01Z"}, {"$date": "2020-05-18T14:10:30Z"}, {"$date": "2021-01-11T06:31:15Z"}]}`,
			`{"_id": 5, "recent": [{"$date": "2019-01-08T06:12:03Z"}]}`,
			`{"_id": 3, "recent": [{"$date": "2019-01-08T06:12:03Z"}, {"$date": "2020-02-08T13:13:23Z"}]}`,
			`{"_id": 1, "recent": [{"$date": "2019-01-08T06:12:03Z"}, {"$date": "2020-02-08T13:13:23Z"}, {"$date": "2021-03-20T11:30:05Z"}]}`}},
	{name: "TimeRangeNegative", input: fxCakeSales,
		pipeline: `[{"$setWindowFields": {"partitionBy": "$state", "sortBy": {"orderDate": 1},
			"output": {"recent": {"$push": "$orderDate", "window": {"range": ["unbounded", -10], "unit": "month"}}}}},
			{"$project": {"recent": 1}}]`,
		want: []string{`{"_id": 4, "recent": []}`, `{"_id": 0, "recent": [{"$date": "2019-05-18T16:09:01Z"}]}`,
			`{"_id": 2, "recent": [{"$date": "2019-05-18T16:09:01Z"}]}`, `{"_id": 5, "recent": []}`,
			`{"_id": 3, "recent": [{"$date": "2019-01-08T06:12:03Z"}]}`,
			`{"_id": 1, "recent": [{"$date": "2019-01-08T06:12:03Z"}, {"$date": "2020-02-08T13:13:23Z"}]}`}},
	{name: "ExpMovingAvgN", input: fxStockPrices,
		pipeline: `[{"$setWindowFields": {"partitionBy": "$stock", "sortBy": {"date": 1},
			"output": {"ema": {"$expMovingAvg": {"input": "$price", "N": 2}}}}}, {"$project": {"ema": 1}}]`,
		want: []string{`{"_id": 1, "ema": 13.0}`, `{"_id": 2, "ema": 14.6}`, `{"_id": 3, "ema": 12.866666666666667}`,
			`{"_id": 4, "ema": 12.088888888888889}`, `{"_id": 5, "ema": 82.0}`, `{"_id": 6, "ema": 90.0}`,
			`{"_id": 7, "ema": 104.66666666666667}`, `{"_id": 8, "ema": 99.75555555555556}`}},
	{name: "ExpMovingAvgAlpha", input: fxStockPrices,
		pipeline: `[{"$setWindowFields": {"partitionBy": "$stock", "sortBy": {"date": 1},
			"output": {"ema": {"$expMovingAvg": {"input": "$price", "alpha": 0.75}}}}}, {"$project": {"ema": 1}}]`,
		want: []string{`{"_id": 1, "ema": 13.0}`, `{"_id": 2, "ema": 14.8}`, `{"_id": 3, "ema": 12.7}`,
			`{"_id": 4, "ema": 11.95}`, `{"_id": 5, "ema": 82.0}`, `{"_id": 6, "ema": 91.0}`,
			`{"_id": 7, "ema": 106.75}`, `{"_id": 8, "ema": 99.6625}`}},
	{name: "Derivative", input: fxDeliveryFleet,
		pipeline: `[{"$setWindowFields": {"partitionBy": "$truckID", "sortBy": {"timeStamp": 1},
			"output": {"speed": {"$derivative": {"input": "$miles", "unit": "hour"}, "window": {"range": [-30, 0], "unit": "second"}}}}},
			{"$match": {"speed": {"$gt": 50}}}, {"$project": {"speed": 1}}]`,
		want: []string{`{"_id": 2, "speed": 63.60000000002401}`, `{"_id": 3, "speed": 74.3999999999869}`,
			`{"_id": 4, "speed": 61.199999999998916}`}},
	{name: "DerivativeFirstIsNull", input: fxDeliveryFleet[:2],
		pipeline: `[{"$setWindowFields": {"sortBy": {"timeStamp": 1},
			"output": {"speed": {"$derivative": {"input": "$miles", "unit": "hour"}, "window": {"documents": [-1, 0]}}}}},
			{"$project": {"speed": 1}}]`,
		want: []string{`{"_id": 1, "speed": null}`, `{"_id": 2, "speed": 63.60000000002401}`}},
	{name: "Integral", input: fxPowerConsumption,
		pipeline: `[{"$setWindowFields": {"partitionBy": "$powerMeterID", "sortBy": {"timeStamp": 1},
			"output": {"kwh": {"$integral": {"input": "$kilowatts", "unit": "hour"}, "window": {"range": ["unbounded", "current"], "unit": "hour"}}}}},
			{"$project": {"kwh": 1}}]`,
		want: []string{`{"_id": 1, "kwh": 0.0}`, `{"_id": 2, "kwh": 0.023541666666666666}`, `{"_id": 3, "kwh": 0.045625}`,
			`{"_id": 4, "kwh": 0.068875}`, `{"_id": 5, "kwh": 0.0}`, `{"_id": 6, "kwh": 0.019791666666666666}`,
			`{"_id": 7, "kwh": 0.040625}`, `{"_id": 8, "kwh": 0.06383333333333334}`}},
	{name: "LinearFillOverwrites", input: fxHourlyStock,
		pipeline: `[{"$setWindowFields": {"sortBy": {"time": 1}, "output": {"price": {"$linearFill": "$price"}}}}, {"$project": {"price": 1}}]`,
		want: []string{`{"_id": 1, "price": 500}`, `{"_id": 2, "price": 507.5}`, `{"_id": 3, "price": 515}`,
			`{"_id": 4, "price": 505.0}`, `{"_id": 5, "price": 495.0}`, `{"_id": 6, "price": 485}`}},
	{name: "LinearFillAndLocf", input: fxHourlyStock,
		pipeline: `[{"$setWindowFields": {"sortBy": {"time": 1}, "output": {"lin": {"$linearFill": "$price"}, "locf": {"$locf": "$price"}}}},
			{"$project": {"lin": 1, "locf": 1}}]`,
		want: []string{`{"_id": 1, "lin": 500, "locf": 500}`, `{"_id": 2, "lin": 507.5, "locf": 500}`,
			`{"_id": 3, "lin": 515, "locf": 515}`, `{"_id": 4, "lin": 505.0, "locf": 515}`,
			`{"_id": 5, "lin": 495.0, "locf": 515}`, `{"_id": 6, "lin": 485, "locf": 485}`}},
	{name: "LinearFillEdgesStayNull", input: []string{`{"_id": 1, "x": 1}`, `{"_id": 2, "x": 2, "v": 10}`, `{"_id": 3, "x": 3}`},
		pipeline: `[{"$setWindowFields": {"sortBy": {"x": 1}, "output": {"v": {"$linearFill": "$v"}}}}]`,
		want:     []string{`{"_id": 1, "x": 1, "v": null}`, `{"_id": 2, "x": 2, "v": 10}`, `{"_id": 3, "x": 3, "v": null}`}},
	{name: "RankFamily", input: []string{`{"_id": 1, "q": 3}`, `{"_id": 2, "q": 1}`, `{"_id": 3, "q": 1}`, `{"_id": 4, "q": 2}`, `{"_id": 5}`, `{"_id": 6, "q": null}`},
		pipeline: `[{"$setWindowFields": {"sortBy": {"q": -1}, "output": {"r": {"$rank": {}}, "d": {"$denseRank": {}}, "n": {"$documentNumber": {}}}}},
			{"$project": {"r": 1, "d": 1, "n": 1}}]`,
		want: []string{`{"_id": 1, "r": 1, "d": 1, "n": 1}`, `{"_id": 4, "r": 2, "d": 2, "n": 2}`, `{"_id": 2, "r": 3, "d": 3, "n": 3}`,
			`{"_id": 3, "r": 3, "d": 3, "n": 4}`, `{"_id": 5, "r": 5, "d": 4, "n": 5}`, `{"_id": 6, "r": 5, "d": 4, "n": 6}`}},
	{name: "Shift", input: fxCakeSales,
		pipeline: `[{"$setWindowFields": {"partitionBy": "$state", "sortBy": {"quantity": -1},
			"output": {"next": {"$shift": {"output": "$quantity", "by": 1, "default": "Not available"}},
				"prev": {"$shift": {"output": "$quantity", "by": -1}}}}}, {"$project": {"next": 1, "prev": 1}}]`,
		want: []string{`{"_id": 4, "next": 145, "prev": null}`, `{"_id": 2, "next": 120, "prev": 162}`,
			`{"_id": 0, "next": "Not available", "prev": 145}`, `{"_id": 1, "next": 134, "prev": null}`,
			`{"_id": 5, "next": 104, "prev": 140}`, `{"_id": 3, "next": "Not available", "prev": 134}`}},
	{name: "FirstLastMissingLeavesField", input: []string{`{"_id": 1, "a": 1, "v": 5}`, `{"_id": 2, "a": 2}`},
		pipeline: `[{"$setWindowFields": {"sortBy": {"a": 1}, "output": {"v": {"$last": "$v", "window": {"documents": ["current", "current"]}},
			"f": {"$first": "$v"}, "e": {"$first": "$v", "window": {"documents": [5, 6]}}}}}]`,
		want: []string{`{"_id": 1, "a": 1, "v": 5, "f": 5, "e": null}`, `{"_id": 2, "a": 2, "f": 5, "e": null}`}},
	{name: "CovarianceAndStdDev", input: []string{`{"_id": 1, "x": 1, "y": 1}`, `{"_id": 2, "x": 2, "y": 2}`, `{"_id": 3, "x": 3, "y": 4}`},
		pipeline: `[{"$setWindowFields": {"sortBy": {"x": 1}, "output": {
			"pop": {"$covariancePop": ["$x", "$y"], "window": {"documents": ["unbounded", "current"]}},
			"samp": {"$covarianceSamp": ["$x", "$y"], "window": {"documents": ["unbounded", "current"]}},
			"sd": {"$stdDevPop": "$x"}}}}, {"$project": {"pop": 1, "samp": 1, "sd": 1}}]`,
		want: []string{`{"_id": 1, "pop": 0.0, "samp": null, "sd": 0.816496580927726}`, `{"_id": 2, "pop": 0.25, "samp": 0.5, "sd": 0.816496580927726}`,
			`{"_id": 3, "pop": 1.0, "samp": 1.5, "sd": 0.816496580927726}`}},
	{name: "AccumulatorsAndEmptyWindows", input: []string{`{"_id": 1, "v": "b"}`, `{"_id": 2, "v": "a"}`, `{"_id": 3, "v": "b"}`},
		pipeline: `[{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {
			"set": {"$addToSet": "$v", "window": {"documents": ["unbounded", "current"]}},
			"n": {"$count": {}, "window": {"documents": [-1, 1]}},
			"none": {"$sum": "$v", "window": {"documents": [2, 3]}},
			"pushed": {"$push": "$v", "window": {"documents": [2, 3]}},
			"top": {"$topN": {"n": 2, "sortBy": {"v": 1}, "output": "$_id"}},
			"min": {"$min": "$v", "window": {"documents": [-5, -1]}}}}}, {"$project": {"v": 0}}]`,
		want: []string{`{"_id": 1, "set": ["b"], "n": 2, "none": 0, "pushed": ["b"], "top": [2, 1], "min": null}`,
			`{"_id": 2, "set": ["b", "a"], "n": 3, "none": 0, "pushed": [], "top": [2, 1], "min": "b"}`,
			`{"_id": 3, "set": ["b", "a"], "n": 2, "none": 0, "pushed": [], "top": [2, 1], "min": "a"}`}},
	{name: "NoSortKeepsOrderOnePartition", input: []string{`{"_id": 2, "v": 1}`, `{"_id": 1, "v": 2}`},
		pipeline: `[{"$setWindowFields": {"output": {"total": {"$sum": "$v"}, "all": {"$push": "$_id"}}}}]`,
		want:     []string{`{"_id": 2, "v": 1, "total": 3, "all": [2, 1]}`, `{"_id": 1, "v": 2, "total": 3, "all": [2, 1]}`}},
	{name: "MissingPartitionIsNull", input: []string{`{"_id": 1, "p": null}`, `{"_id": 2}`, `{"_id": 3, "p": 1}`},
		pipeline: `[{"$setWindowFields": {"partitionBy": "$p", "sortBy": {"_id": 1}, "output": {"n": {"$sum": 1}}}}]`,
		want:     []string{`{"_id": 1, "p": null, "n": 2}`, `{"_id": 2, "n": 2}`, `{"_id": 3, "p": 1, "n": 1}`}},
	{name: "DottedOutput", input: []string{`{"_id": 1, "a": [{"x": 1}, 2]}`, `{"_id": 2, "a": 5}`},
		pipeline: `[{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {"a.n": {"$documentNumber": {}}}}}]`,
		want:     []string{`{"_id": 1, "a": [{"x": 1, "n": 1}, {"n": 1}]}`, `{"_id": 2, "a": {"n": 2}}`}},
	{name: "RangeSkipsNonNumbers", input: []string{`{"_id": 1}`, `{"_id": 2, "x": 1}`, `{"_id": 3, "x": 2}`, `{"_id": 4, "x": "s"}`},
		pipeline: `[{"$match": {"x": {"$type": "number"}}}, {"$setWindowFields": {"sortBy": {"x": 1}, "output": {"ids": {"$push": "$_id", "window": {"range": ["unbounded", "unbounded"]}}}}}]`,
		want:     []string{`{"_id": 2, "x": 1, "ids": [2, 3]}`, `{"_id": 3, "x": 2, "ids": [2, 3]}`}},

	{name: "ErrNotObject", pipeline: `[{"$setWindowFields": "x"}]`, code: mongoerr.FailedToParse},
	{name: "ErrSortByType", pipeline: `[{"$setWindowFields": {"sortBy": "x", "output": {}}}]`, code: mongoerr.TypeMismatch},
	{name: "ErrOutputType", pipeline: `[{"$setWindowFields": {"output": "x"}}]`, code: mongoerr.TypeMismatch},
	{name: "ErrUnknownField", pipeline: `[{"$setWindowFields": {"what": 1}}]`, code: mongoerr.Location40415},
	{name: "ErrMissingOutput", pipeline: `[{"$setWindowFields": {}}]`, code: mongoerr.Location40414},
	{name: "ErrBadPartitionOp", pipeline: `[{"$setWindowFields": {"partitionBy": {"$notAnOperator": 1}, "output": {}}}]`, code: mongoerr.InvalidPipelineOperator},
	{name: "ErrUnknownFunction", pipeline: `[{"$setWindowFields": {"output": {"v": {"$summ": "$x"}}}}]`, code: mongoerr.FailedToParse},
	{name: "ErrNotAFunction", pipeline: `[{"$setWindowFields": {"output": {"v": {"sum": "$x"}}}}]`, code: mongoerr.FailedToParse},
	{name: "ErrMergeObjects", pipeline: `[{"$setWindowFields": {"output": {"v": {"$mergeObjects": "$x"}}}}]`, code: mongoerr.FailedToParse},
	{name: "ErrUnknownArgument", pipeline: `[{"$setWindowFields": {"sortBy": {"t": 1}, "output": {"v": {"$sum": "$a", "abc": 1}}}}]`, code: mongoerr.FailedToParse},
	{name: "ErrBackwardsBounds", pipeline: `[{"$setWindowFields": {"sortBy": {"t": 1}, "output": {"v": {"$sum": "$a", "window": {"documents": [1, -1]}}}}}]`, code: 5339900},
	{name: "ErrBackwardsRange", pipeline: `[{"$setWindowFields": {"sortBy": {"t": 1}, "output": {"v": {"$sum": "$a", "window": {"range": ["current", -1], "unit": "day"}}}}}]`, code: 5339900},
	{name: "ErrDocumentsNeedSort", pipeline: `[{"$setWindowFields": {"output": {"v": {"$sum": "$a", "window": {"documents": ["unbounded", "current"]}}}}}]`, code: 5339901},
	{name: "ErrRangeNeedsOneSort", pipeline: `[{"$setWindowFields": {"sortBy": {"a": 1, "b": 1}, "output": {"v": {"$sum": "$a", "window": {"range": [-1, 1]}}}}}]`, code: 5339902},
	{name: "ErrBoundNotInteger", pipeline: `[{"$setWindowFields": {"sortBy": {"t": 1}, "output": {"v": {"$sum": "$a", "window": {"documents": [{"$literal": "current"}, 3]}}}}}]`, code: mongoerr.FailedToParse},
	{name: "ErrConflictingPaths", pipeline: `[{"$setWindowFields": {"output": {"a": {"$sum": 1}, "a.b": {"$sum": 1}}}}]`, code: 6307900},
	{name: "ErrRankNoSort", pipeline: `[{"$setWindowFields": {"output": {"r": {"$rank": {}}}}}]`, code: 5371602},
	{name: "ErrRankArgs", pipeline: `[{"$setWindowFields": {"sortBy": {"a": 1}, "output": {"r": {"$rank": 1}}}}]`, code: 5371603},
	{name: "ErrRankWindow", pipeline: `[{"$setWindowFields": {"sortBy": {"a": 1}, "output": {"r": {"$rank": {}, "window": {}}}}}]`, code: 5371601},
	{name: "ErrShiftNoSort", pipeline: `[{"$setWindowFields": {"output": {"r": {"$shift": {"output": "$a", "by": 1}}}}}]`, code: mongoerr.FailedToParse},
	{name: "ErrShiftDefault", pipeline: `[{"$setWindowFields": {"sortBy": {"a": 1}, "output": {"r": {"$shift": {"output": "$a", "by": 1, "default": "$a"}}}}}]`, code: mongoerr.FailedToParse},
	{name: "ErrDerivativeNeedsWindow", pipeline: `[{"$setWindowFields": {"sortBy": {"a": 1}, "output": {"r": {"$derivative": {"input": "$a"}}}}}]`, code: mongoerr.FailedToParse},
	{name: "ErrDerivativeMonth", pipeline: `[{"$setWindowFields": {"sortBy": {"a": 1}, "output": {"r": {"$derivative": {"input": "$a", "unit": "month"}, "window": {"documents": [-1, 0]}}}}}]`, code: 5490710},
	{name: "ErrLinearFillNoSort", pipeline: `[{"$setWindowFields": {"output": {"r": {"$linearFill": "$a"}}}}]`, code: 605001},
	{name: "ErrLinearFillRepeated", input: []string{`{"x": 1, "v": 1}`, `{"x": 1}`},
		pipeline: `[{"$setWindowFields": {"sortBy": {"x": 1}, "output": {"r": {"$linearFill": "$v"}}}}]`, code: 6050106},
	{name: "ErrEmaAlpha", pipeline: `[{"$setWindowFields": {"sortBy": {"a": 1}, "output": {"r": {"$expMovingAvg": {"input": "$a", "alpha": 2}}}}}]`, code: mongoerr.FailedToParse},
	{name: "ErrPartitionArray", input: []string{`{"p": [1, 2]}`},
		pipeline: `[{"$setWindowFields": {"partitionBy": "$p", "output": {"n": {"$sum": 1}}}}]`, code: mongoerr.TypeMismatch},
	{name: "ErrConstantPartitionArray", pipeline: `[{"$setWindowFields": {"partitionBy": [1], "output": {"n": {"$sum": 1}}}}]`, code: mongoerr.TypeMismatch},
	{name: "ErrRangeNotNumber", input: []string{`{"x": "a"}`},
		pipeline: `[{"$setWindowFields": {"sortBy": {"x": 1}, "output": {"n": {"$sum": 1, "window": {"range": [-1, 1]}}}}}]`, code: 5429414},
	{name: "ErrRangeDateWithoutUnit", input: []string{`{"x": {"$date": "2020-01-01T00:00:00Z"}}`},
		pipeline: `[{"$setWindowFields": {"sortBy": {"x": 1}, "output": {"n": {"$sum": 1, "window": {"range": [-1, 1]}}}}}]`, code: 5429413},
	{name: "PercentileMedianWindows", input: []string{`{"_id": 1, "x": 5}`, `{"_id": 2, "x": 1}`, `{"_id": 3, "x": 4}`, `{"_id": 4, "x": 2}`, `{"_id": 5, "x": 3}`},
		pipeline: `[{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {
			"run": {"$median": {"input": "$x", "method": "approximate"}, "window": {"documents": ["unbounded", "current"]}},
			"near": {"$percentile": {"input": "$x", "p": [0, 1], "method": "approximate"}, "window": {"documents": [-1, 1]}},
			"all": {"$median": {"input": "$x", "method": "approximate"}}}}}, {"$project": {"run": 1, "near": 1, "all": 1}}]`,
		want: []string{`{"_id": 1, "run": 5.0, "near": [1.0, 5.0], "all": 3.0}`, `{"_id": 2, "run": 1.0, "near": [1.0, 5.0], "all": 3.0}`,
			`{"_id": 3, "run": 4.0, "near": [1.0, 4.0], "all": 3.0}`, `{"_id": 4, "run": 2.0, "near": [2.0, 4.0], "all": 3.0}`,
			`{"_id": 5, "run": 3.0, "near": [2.0, 3.0], "all": 3.0}`}},
	{name: "ErrMedianMethod", pipeline: `[{"$setWindowFields": {"output": {"n": {"$median": {"input": "$a", "method": "discrete"}}}}}]`, code: mongoerr.BadValue},
}

func TestAggregateSetWindowFields(t *testing.T) { runStageCases(t, windowCases) }

func TestAggregateSetWindowFieldsMemoryLimit(t *testing.T) {
	docs := make([]bsoncore.Document, 100)
	for i := range docs {
		docs[i] = bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendString("pad", strings.Repeat("x", 100)).Build()
	}
	for _, diskUse := range []bool{false, true} {
		env := &Env{DB: "test", Opts: &expr.Options{Now: time.Now()}, MemLimit: 4096, AllowDiskUse: diskUse}
		p, err := Parse(env, streamtest.ExtArray(t, `[{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {"n": {"$sum": 1}}}}]`), false)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.OpenOver(&stream.Slice{Docs: docs}, 0)
		if err != nil {
			t.Fatal(err)
		}
		d, err := out.Next(context.Background())
		out.Close()
		var me *mongoerr.Error
		switch {
		case !diskUse && (!errors.As(err, &me) || me.Code != 5643011):
			t.Fatalf("without allowDiskUse: got %v, %v", d, err)
		case diskUse && (err != nil || d == nil):
			t.Fatalf("with allowDiskUse: got %v, %v", d, err)
		}
	}
}

// BenchmarkSetWindowFieldsRunningTotal measures a running total over one large partition,
// which must stay linear in the partition's size.
func BenchmarkSetWindowFieldsRunningTotal(b *testing.B) {
	docs := make([]bsoncore.Document, 20000)
	for i := range docs {
		docs[i] = bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendInt32("v", int32(i%7)).Build()
	}
	env := &Env{DB: "test", Opts: &expr.Options{Now: time.Now()}}
	p, err := Parse(env, streamtest.ExtArray(b, `[{"$setWindowFields": {"sortBy": {"_id": 1},
		"output": {"t": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}}}}}]`), false)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		out, err := p.OpenOver(&stream.Slice{Docs: docs}, 0)
		if err != nil {
			b.Fatal(err)
		}
		for {
			d, err := out.Next(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if d == nil {
				break
			}
		}
		out.Close()
	}
}
