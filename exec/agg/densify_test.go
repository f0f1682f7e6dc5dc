package agg

import "testing"

// fxWeather and fxCoffee are the collections of MongoDB's $densify documentation examples.
var (
	fxWeather = []string{
		`{"_id": 1, "metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": {"$date": "2021-05-18T00:00:00Z"}, "temp": 12}`,
		`{"_id": 2, "metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": {"$date": "2021-05-18T04:00:00Z"}, "temp": 11}`,
		`{"_id": 3, "metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": {"$date": "2021-05-18T08:00:00Z"}, "temp": 11}`,
		`{"_id": 4, "metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": {"$date": "2021-05-18T12:00:00Z"}, "temp": 12}`,
	}
	fxCoffee = []string{
		`{"_id": 1, "altitude": 600, "variety": "Arabica Typica", "score": 68.3}`,
		`{"_id": 2, "altitude": 750, "variety": "Arabica Typica", "score": 69.5}`,
		`{"_id": 3, "altitude": 950, "variety": "Arabica Typica", "score": 70.5}`,
		`{"_id": 4, "altitude": 1250, "variety": "Gesha", "score": 88.15}`,
		`{"_id": 5, "altitude": 1700, "variety": "Gesha", "score": 95.5, "price": 1029}`,
	}
)

// densifyCases come from MongoDB's $densify documentation, plus edge cases of its
// implementation (explicit bounds past the last document, values off the step grid).
var densifyCases = []aggCase{
	{name: "TimeSeries", input: fxWeather,
		pipeline: `[{"$densify": {"field": "timestamp", "range": {"step": 1, "unit": "hour",
			"bounds": [{"$date": "2021-05-18T00:00:00Z"}, {"$date": "2021-05-18T08:00:00Z"}]}}}, {"$project": {"metadata": 0, "temp": 0}}]`,
		want: []string{`{"_id": 1, "timestamp": {"$date": "2021-05-18T00:00:00Z"}}`, `{"timestamp": {"$date": "2021-05-18T01:00:00Z"}}`,
			`{"timestamp": {"$date": "2021-05-18T02:00:00Z"}}`, `{"timestamp": {"$date": "2021-05-18T03:00:00Z"}}`,
			`{"_id": 2, "timestamp": {"$date": "2021-05-18T04:00:00Z"}}`, `{"timestamp": {"$date": "2021-05-18T05:00:00Z"}}`,
			`{"timestamp": {"$date": "2021-05-18T06:00:00Z"}}`, `{"timestamp": {"$date": "2021-05-18T07:00:00Z"}}`,
			`{"_id": 3, "timestamp": {"$date": "2021-05-18T08:00:00Z"}}`, `{"_id": 4, "timestamp": {"$date": "2021-05-18T12:00:00Z"}}`}},
	{name: "FullWithPartitions", input: fxCoffee,
		pipeline: `[{"$densify": {"field": "altitude", "partitionByFields": ["variety"], "range": {"bounds": "full", "step": 200}}},
			{"$project": {"score": 0, "price": 0}}]`,
		want: []string{`{"_id": 1, "altitude": 600, "variety": "Arabica Typica"}`, `{"_id": 2, "altitude": 750, "variety": "Arabica Typica"}`,
			`{"variety": "Arabica Typica", "altitude": 800}`, `{"_id": 3, "altitude": 950, "variety": "Arabica Typica"}`,
			`{"variety": "Gesha", "altitude": 600}`, `{"variety": "Gesha", "altitude": 800}`, `{"variety": "Gesha", "altitude": 1000}`,
			`{"variety": "Gesha", "altitude": 1200}`, `{"_id": 4, "altitude": 1250, "variety": "Gesha"}`,
			`{"variety": "Gesha", "altitude": 1400}`, `{"variety": "Gesha", "altitude": 1600}`, `{"_id": 5, "altitude": 1700, "variety": "Gesha"}`,
			`{"variety": "Arabica Typica", "altitude": 1000}`, `{"variety": "Arabica Typica", "altitude": 1200}`,
			`{"variety": "Arabica Typica", "altitude": 1400}`, `{"variety": "Arabica Typica", "altitude": 1600}`}},
	{name: "PartitionBounds", input: fxCoffee,
		pipeline: `[{"$densify": {"field": "altitude", "partitionByFields": ["variety"], "range": {"bounds": "partition", "step": 200}}},
			{"$project": {"score": 0, "price": 0}}]`,
		want: []string{`{"_id": 1, "altitude": 600, "variety": "Arabica Typica"}`, `{"_id": 2, "altitude": 750, "variety": "Arabica Typica"}`,
			`{"variety": "Arabica Typica", "altitude": 800}`, `{"_id": 3, "altitude": 950, "variety": "Arabica Typica"}`,
			`{"_id": 4, "altitude": 1250, "variety": "Gesha"}`, `{"variety": "Gesha", "altitude": 1450}`,
			`{"variety": "Gesha", "altitude": 1650}`, `{"_id": 5, "altitude": 1700, "variety": "Gesha"}`}},
	{name: "ExplicitPastLastDoc", input: []string{`{"v": 1}`, `{"v": 4}`, `{"x": 1}`, `{"v": null}`},
		pipeline: `[{"$densify": {"field": "v", "range": {"step": 2, "bounds": [0, 9]}}}]`,
		want:     []string{`{"x": 1}`, `{"v": null}`, `{"v": 0}`, `{"v": 1}`, `{"v": 2}`, `{"v": 4}`, `{"v": 6}`, `{"v": 8}`}},
	{name: "ExplicitEmptyInput", input: nil,
		pipeline: `[{"$densify": {"field": "a.b", "range": {"step": 1.5, "bounds": [1.0, 4.0]}}}]`,
		want:     []string{`{"a": {"b": 1.0}}`, `{"a": {"b": 2.5}}`}},
	{name: "ExplicitWithPartitions", input: []string{`{"p": "x", "v": 2}`, `{"p": "y", "v": 5}`},
		pipeline: `[{"$densify": {"field": "v", "partitionByFields": ["p"], "range": {"step": 2, "bounds": [0, 5]}}}]`,
		want: []string{`{"p": "x", "v": 0}`, `{"p": "x", "v": 2}`, `{"p": "y", "v": 0}`, `{"p": "y", "v": 2}`,
			`{"p": "y", "v": 4}`, `{"p": "y", "v": 5}`, `{"p": "x", "v": 4}`}},
	{name: "FullMonths", input: []string{`{"d": {"$date": "2021-01-31T00:00:00Z"}}`, `{"d": {"$date": "2021-04-01T00:00:00Z"}}`},
		pipeline: `[{"$densify": {"field": "d", "range": {"step": 1, "unit": "month", "bounds": "full"}}}]`,
		want: []string{`{"d": {"$date": "2021-01-31T00:00:00Z"}}`, `{"d": {"$date": "2021-02-28T00:00:00Z"}}`,
			`{"d": {"$date": "2021-03-28T00:00:00Z"}}`, `{"d": {"$date": "2021-04-01T00:00:00Z"}}`}},

	{name: "ErrNotObject", pipeline: `[{"$densify": 1}]`, code: 9},
	{name: "ErrMissingField", pipeline: `[{"$densify": {"range": {"step": 1, "bounds": "full"}}}]`, code: 40414},
	{name: "ErrUnknown", pipeline: `[{"$densify": {"field": "a", "range": {"step": 1, "bounds": "full"}, "x": 1}}]`, code: 40415},
	{name: "ErrStep", pipeline: `[{"$densify": {"field": "a", "range": {"step": 0, "bounds": "full"}}}]`, code: 5733401},
	{name: "ErrDateStep", pipeline: `[{"$densify": {"field": "a", "range": {"step": 1.5, "unit": "day", "bounds": "full"}}}]`, code: 6586400},
	{name: "ErrBoundsString", pipeline: `[{"$densify": {"field": "a", "range": {"step": 1, "bounds": "x"}}}]`, code: 5946802},
	{name: "ErrBoundsOrder", pipeline: `[{"$densify": {"field": "a", "range": {"step": 1, "bounds": [2, 1]}}}]`, code: 5733402},
	{name: "ErrBoundsTypes", pipeline: `[{"$densify": {"field": "a", "range": {"step": 1, "bounds": [1, 2.0]}}}]`, code: 5876900},
	{name: "ErrPartitionNoFields", pipeline: `[{"$densify": {"field": "a", "range": {"step": 1, "bounds": "partition"}}}]`, code: 5733408},
	{name: "ErrValueType", input: []string{`{"a": "x"}`},
		pipeline: `[{"$densify": {"field": "a", "range": {"step": 1, "bounds": "full"}}}]`, code: 5733201},
	{name: "ErrDateWithoutUnit", input: []string{`{"a": {"$date": "2021-01-01T00:00:00Z"}}`},
		pipeline: `[{"$densify": {"field": "a", "range": {"step": 1, "bounds": "full"}}}]`, code: 6053600},
}

func TestAggregateDensify(t *testing.T) { runStageCases(t, densifyCases) }

// fxDailySales, fxRestaurantReviews and fxReviewsByRestaurant are the collections of MongoDB's
// $fill documentation examples.
var (
	fxDailySales = []string{
		`{"_id": 1, "date": {"$date": "2022-02-02T00:00:00Z"}, "bootsSold": 10, "sandalsSold": 20, "sneakersSold": 12}`,
		`{"_id": 2, "date": {"$date": "2022-02-03T00:00:00Z"}, "bootsSold": 7, "sneakersSold": 18}`,
		`{"_id": 3, "date": {"$date": "2022-02-04T00:00:00Z"}, "sneakersSold": 5}`,
	}
	fxRestaurantReviews = []string{
		`{"_id": 1, "date": {"$date": "2021-03-08T00:00:00Z"}, "score": 90}`,
		`{"_id": 2, "date": {"$date": "2021-03-09T00:00:00Z"}, "score": 92}`,
		`{"_id": 3, "date": {"$date": "2021-03-10T00:00:00Z"}}`,
		`{"_id": 4, "date": {"$date": "2021-03-11T00:00:00Z"}}`,
		`{"_id": 5, "date": {"$date": "2021-03-12T00:00:00Z"}, "score": 85}`,
		`{"_id": 6, "date": {"$date": "2021-03-13T00:00:00Z"}}`,
	}
	fxReviewsByRestaurant = []string{
		`{"_id": 1, "date": {"$date": "2021-03-08T00:00:00Z"}, "restaurant": "Joe's Pizza", "score": 90}`,
		`{"_id": 2, "date": {"$date": "2021-03-08T00:00:00Z"}, "restaurant": "Sally's Deli", "score": 75}`,
		`{"_id": 3, "date": {"$date": "2021-03-09T00:00:00Z"}, "restaurant": "Joe's Pizza", "score": 92}`,
		`{"_id": 4, "date": {"$date": "2021-03-09T00:00:00Z"}, "restaurant": "Sally's Deli"}`,
		`{"_id": 5, "date": {"$date": "2021-03-10T00:00:00Z"}, "restaurant": "Joe's Pizza"}`,
		`{"_id": 6, "date": {"$date": "2021-03-10T00:00:00Z"}, "restaurant": "Sally's Deli", "score": 68}`,
		`{"_id": 7, "date": {"$date": "2021-03-11T00:00:00Z"}, "restaurant": "Joe's Pizza", "score": 93}`,
		`{"_id": 8, "date": {"$date": "2021-03-11T00:00:00Z"}, "restaurant": "Sally's Deli"}`,
	}
)

// fillCases come from MongoDB's $fill documentation.
var fillCases = []aggCase{
	{name: "ConstantValue", input: fxDailySales,
		pipeline: `[{"$fill": {"output": {"bootsSold": {"value": 0}, "sandalsSold": {"value": 0}, "sneakersSold": {"value": 0}}}}]`,
		want: []string{`{"_id": 1, "date": {"$date": "2022-02-02T00:00:00Z"}, "bootsSold": 10, "sandalsSold": 20, "sneakersSold": 12}`,
			`{"_id": 2, "date": {"$date": "2022-02-03T00:00:00Z"}, "bootsSold": 7, "sneakersSold": 18, "sandalsSold": 0}`,
			`{"_id": 3, "date": {"$date": "2022-02-04T00:00:00Z"}, "sneakersSold": 5, "bootsSold": 0, "sandalsSold": 0}`}},
	{name: "Linear", input: fxHourlyStock,
		pipeline: `[{"$fill": {"sortBy": {"time": 1}, "output": {"price": {"method": "linear"}}}}, {"$project": {"price": 1}}]`,
		want: []string{`{"_id": 1, "price": 500}`, `{"_id": 2, "price": 507.5}`, `{"_id": 3, "price": 515}`,
			`{"_id": 4, "price": 505.0}`, `{"_id": 5, "price": 495.0}`, `{"_id": 6, "price": 485}`}},
	{name: "Locf", input: fxRestaurantReviews,
		pipeline: `[{"$fill": {"sortBy": {"date": 1}, "output": {"score": {"method": "locf"}}}}, {"$project": {"score": 1}}]`,
		want: []string{`{"_id": 1, "score": 90}`, `{"_id": 2, "score": 92}`, `{"_id": 3, "score": 92}`,
			`{"_id": 4, "score": 92}`, `{"_id": 5, "score": 85}`, `{"_id": 6, "score": 85}`}},
	{name: "LocfPartitions", input: fxReviewsByRestaurant,
		pipeline: `[{"$fill": {"sortBy": {"date": 1}, "partitionBy": {"restaurant": "$restaurant"}, "output": {"score": {"method": "locf"}}}},
			{"$project": {"score": 1}}]`,
		want: []string{`{"_id": 1, "score": 90}`, `{"_id": 3, "score": 92}`, `{"_id": 5, "score": 92}`, `{"_id": 7, "score": 93}`,
			`{"_id": 2, "score": 75}`, `{"_id": 4, "score": 75}`, `{"_id": 6, "score": 68}`, `{"_id": 8, "score": 68}`}},
	{name: "PartitionByFields", input: fxReviewsByRestaurant[:4],
		pipeline: `[{"$fill": {"sortBy": {"date": 1}, "partitionByFields": ["restaurant"], "output": {"score": {"method": "locf"}}}},
			{"$project": {"score": 1}}]`,
		want: []string{`{"_id": 1, "score": 90}`, `{"_id": 3, "score": 92}`, `{"_id": 2, "score": 75}`, `{"_id": 4, "score": 75}`}},

	{name: "ErrNotObject", pipeline: `[{"$fill": 1}]`, code: 9},
	{name: "ErrNoOutput", pipeline: `[{"$fill": {}}]`, code: 40414},
	{name: "ErrEmptyOutput", pipeline: `[{"$fill": {"output": {}}}]`, code: 6050203},
	{name: "ErrOutputNotObject", pipeline: `[{"$fill": {"output": {"a": 1}}}]`, code: 6050200},
	{name: "ErrMethodAndValue", pipeline: `[{"$fill": {"output": {"a": {"method": "locf", "value": 1}}}}]`, code: 6050201},
	{name: "ErrMethod", pipeline: `[{"$fill": {"output": {"a": {"method": "x"}}}}]`, code: 6050202},
	{name: "ErrBothPartitions", pipeline: `[{"$fill": {"partitionBy": "$a", "partitionByFields": ["a"], "output": {"a": {"method": "locf"}}}}]`, code: 6050204},
	{name: "ErrLinearNoSort", pipeline: `[{"$fill": {"output": {"a": {"method": "linear"}}}}]`, code: 605001},
}

func TestAggregateFill(t *testing.T) { runStageCases(t, fillCases) }

// redactCases come from MongoDB's $redact documentation.
var redactCases = []aggCase{
	{name: "DescendOrPrune",
		input: []string{`{"_id": 1, "title": "123 Department Report", "tags": ["G", "STLW"], "year": 2014, "subsections": [
			{"subtitle": "Section 1: Overview", "tags": ["SI", "G"], "content": "Section 1: This is the content of section 1."},
			{"subtitle": "Section 2: Analysis", "tags": ["STLW"], "content": "Section 2: This is the content of section 2."},
			{"subtitle": "Section 3: Budgeting", "tags": ["TK"], "content": {"text": "Section 3: This is the content of section 3.", "tags": ["HCS"]}}]}`},
		pipeline: `[{"$match": {"year": 2014}}, {"$redact": {"$cond": {
			"if": {"$gt": [{"$size": {"$setIntersection": ["$tags", ["STLW", "G"]]}}, 0]}, "then": "$$DESCEND", "else": "$$PRUNE"}}}]`,
		want: []string{`{"_id": 1, "title": "123 Department Report", "tags": ["G", "STLW"], "year": 2014, "subsections": [
			{"subtitle": "Section 1: Overview", "tags": ["SI", "G"], "content": "Section 1: This is the content of section 1."},
			{"subtitle": "Section 2: Analysis", "tags": ["STLW"], "content": "Section 2: This is the content of section 2."}]}`}},
	{name: "PruneLevel5",
		input: []string{`{"_id": 1, "level": 1, "acct_id": "xyz123", "cc": {"level": 5, "type": "yy", "num": 0, "billing_addr": {"level": 5, "addr1": "123 ABC Street"}},
			"shipping_addr": [{"level": 3, "addr1": "987 XYZ Ave"}, {"level": 5, "addr1": "PO Box 0123"}], "status": "A"}`},
		pipeline: `[{"$redact": {"$cond": {"if": {"$eq": ["$level", 5]}, "then": "$$PRUNE", "else": "$$DESCEND"}}}]`,
		want:     []string{`{"_id": 1, "level": 1, "acct_id": "xyz123", "shipping_addr": [{"level": 3, "addr1": "987 XYZ Ave"}], "status": "A"}`}},
	{name: "KeepAndRootAndPruneTop", input: []string{`{"_id": 1, "a": {"b": 1}}`, `{"_id": 2, "a": {"b": 2}}`},
		pipeline: `[{"$redact": {"$cond": [{"$eq": ["$$ROOT._id", 1]}, "$$KEEP", "$$PRUNE"]}}]`,
		want:     []string{`{"_id": 1, "a": {"b": 1}}`}},
	{name: "LiteralIsNotAVariable", input: []string{`{"_id": 1}`},
		pipeline: `[{"$redact": {"$literal": "$$KEEP"}}]`, code: 17053},
	{name: "ErrBadResult", input: []string{`{"_id": 1}`}, pipeline: `[{"$redact": "other"}]`, code: 17053},
	{name: "ErrUndefinedElsewhere", pipeline: `[{"$project": {"a": "$$KEEP"}}]`, code: 17276},
}

func TestAggregateRedact(t *testing.T) { runStageCases(t, redactCases) }
