package stream

import "context"

// CheckEvery is how many documents a blocking loop (a sort, a $group, any stage that reads
// its whole input before it answers) reads between checks of its context, so that
// maxTimeMS, killOp and a client gone stop it mid-way. Its input may never check: a scan
// whose documents all match, a $unwind, documents held in memory. One check costs a few
// nanoseconds; every 1,024 documents it is lost in the noise.
const CheckEvery = 1024

// Checker counts the documents of a loop and checks the context at the first and then every
// CheckEvery. Its zero value is ready.
//
//	var chk stream.Checker
//	for d, err := in.Next(ctx); d != nil; d, err = in.Next(ctx) {
//		if err := chk.Tick(ctx); err != nil {
//			return err
//		}
//		...
//	}
type Checker struct{ n uint32 }

// Tick counts one document and returns ctx's error when it is time to check.
func (c *Checker) Tick(ctx context.Context) error {
	c.n++
	if c.n%CheckEvery != 1 {
		return nil
	}
	return ctx.Err()
}
