package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The Stable API (versioned API): a command may declare apiVersion "1", and with it
// apiStrict (refuse commands and aggregation stages outside version 1) and
// apiDeprecationErrors (refuse what version 1 deprecates, which is nothing). MongoDB checks
// the declaration after finding the command and before running it
// (validate_api_parameters.cpp); so does checkAPIParameters.

// apiV1Stages are the aggregation stages of Stable API version 1; under apiStrict any
// other stage ($currentOp, $listLocalSessions, $listSessions, ...) is refused.
var apiV1Stages = map[string]bool{
	"$addFields": true, "$bucket": true, "$bucketAuto": true, "$changeStream": true,
	"$collStats": true, "$count": true, "$densify": true, "$documents": true, "$facet": true,
	"$fill": true, "$geoNear": true, "$graphLookup": true, "$group": true, "$indexStats": true,
	"$limit": true, "$lookup": true, "$match": true, "$merge": true, "$out": true,
	"$project": true, "$redact": true, "$replaceRoot": true, "$replaceWith": true,
	"$sample": true, "$set": true, "$setWindowFields": true, "$skip": true, "$sort": true,
	"$sortByCount": true, "$unionWith": true, "$unset": true, "$unwind": true,
	"$shardedDataDistribution": true,
}

// apiParams are a command's Stable API fields.
type apiParams struct {
	version                 string
	hasVersion              bool
	strict, deprecationErrs bool
	hasStrict, hasDepErrs   bool
}

// parseAPIParams reads apiVersion, apiStrict and apiDeprecationErrors with the IDL's type
// errors (APIParametersFromClient).
func parseAPIParams(body bsoncore.Document) (apiParams, error) {
	var p apiParams
	it := bsonx.Elements(body)
	for {
		el, ok := it.Next()
		if !ok {
			return p, nil
		}
		v := el.Value()
		switch el.Key() {
		case "apiVersion":
			s, ok := v.StringValueOK()
			if !ok {
				return p, apiTypeError("apiVersion", v, "string")
			}
			p.version, p.hasVersion = s, true
		case "apiStrict":
			b, ok := v.BooleanOK()
			if !ok {
				return p, apiTypeError("apiStrict", v, "bool")
			}
			p.strict, p.hasStrict = b, true
		case "apiDeprecationErrors":
			b, ok := v.BooleanOK()
			if !ok {
				return p, apiTypeError("apiDeprecationErrors", v, "bool")
			}
			p.deprecationErrs, p.hasDepErrs = b, true
		}
	}
}

func apiTypeError(field string, v bsoncore.Value, want string) error {
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'APIParametersFromClient.%s' is the wrong type '%s', expected type '%s'",
		field, bsonx.TypeName(v.Type), want)
}

// checkAPIParameters applies the Stable API declaration of r to its command: a version
// other than "1", apiStrict or apiDeprecationErrors without a version, a command (or, for
// aggregate, a stage) outside version 1 under apiStrict, a deprecated command under
// apiDeprecationErrors.
func checkAPIParameters(_ context.Context, r *command.Request) error {
	if !r.HasAPIParams() { // none of the fields: nothing to check
		return nil
	}
	p, err := parseAPIParams(r.Body)
	if err != nil {
		return err
	}
	if (p.hasStrict || p.hasDepErrs) && !p.hasVersion {
		return mongoerr.New(mongoerr.Location4886600, "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion")
	}
	if !p.hasVersion {
		return nil
	}
	if p.version == "2" {
		return mongoerr.New(mongoerr.APIVersionError, "Cannot accept API version 2")
	}
	if p.version != "1" {
		return mongoerr.New(mongoerr.APIVersionError, "API version must be \"1\"")
	}
	if p.strict {
		if !r.Cmd.Has(command.APIV1) {
			return mongoerr.New(mongoerr.APIStrictError, "Provided apiStrict:true, but the command %s is not in API Version %s. "+
				"Information on supported commands and migrations in API Version %s can be found at "+
				"https://dochub.mongodb.org/core/manual-versioned-api.", r.Name, p.version, p.version)
		}
		if r.Name == "aggregate" {
			if err := checkAPIStages(r.Body, p.version); err != nil {
				return err
			}
		}
	}
	if p.deprecationErrs && r.Cmd.DeprecatedIn == p.version {
		return mongoerr.New(mongoerr.APIDeprecationError, "Provided apiDeprecationErrors:true, but the command %s is deprecated in API Version %s.",
			r.Name, p.version)
	}
	return nil
}

// checkAPIStages refuses the first stage of an aggregate's pipeline that is outside API
// version 1, sub-pipelines included (the pipeline's own parse reports malformed stages).
func checkAPIStages(body bsoncore.Document, version string) error {
	pipeline, ok := body.Lookup("pipeline").ArrayOK()
	if !ok {
		return nil
	}
	return checkAPIPipeline(pipeline, version)
}

// checkAPIPipeline checks each stage of pipeline, then its sub-pipelines, in order, as
// MongoDB's LiteParsedPipeline::validate does: {$facet: {x: [{$listSessions: {}}]}} is
// refused for its $listSessions.
func checkAPIPipeline(pipeline bsoncore.Array, version string) error {
	values, _ := pipeline.Values()
	for _, v := range values {
		stage, ok := v.DocumentOK()
		if !ok {
			continue
		}
		first, ok := bsonx.FirstElement(stage)
		if !ok {
			continue
		}
		if !apiV1Stages[first.Key()] {
			return mongoerr.New(mongoerr.APIStrictError, "%s is not allowed with 'apiStrict: true' in API Version %s", first.Key(), version)
		}
		for _, sub := range subPipelines(first.Key(), first.Value()) {
			if err := checkAPIPipeline(sub, version); err != nil {
				return err
			}
		}
	}
	return nil
}

// subPipelines returns the pipelines inside the argument arg of stage name: $lookup's and
// $unionWith's pipeline, each of $facet's.
func subPipelines(name string, arg bsoncore.Value) []bsoncore.Array {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil
	}
	switch name {
	case "$lookup", "$unionWith":
		if p, ok := d.Lookup("pipeline").ArrayOK(); ok {
			return []bsoncore.Array{p}
		}
	case "$facet":
		var out []bsoncore.Array
		elems, _ := d.Elements()
		for _, el := range elems {
			if p, ok := el.Value().ArrayOK(); ok {
				out = append(out, p)
			}
		}
		return out
	}
	return nil
}
