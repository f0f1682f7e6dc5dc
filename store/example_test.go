package store_test

import (
	"fmt"

	"github.com/cleavedb/cleave/store"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Example creates a collection, writes a document with its _id index entry and stats in one
// durable batch, and reads it back by key and by scan.
func Example() {
	db, err := store.Open(store.Options{Dir: "shard-0", FS: vfs.NewMem()})
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := db.Close(); err != nil {
			panic(err)
		}
	}()
	cat, err := store.OpenCatalog(db)
	if err != nil {
		panic(err)
	}
	coll, err := cat.CreateCollection(store.Collection{DB: "test", Name: "people"})
	if err != nil {
		panic(err)
	}

	id := []byte("\x10id-1\x00") // an encoded _id (bsonx.AppendKey in real code)
	doc := []byte("{...bson...}")
	b := db.NewBatch()
	b.SetDoc(coll.ID, 0, id, doc) // unsharded: hash 0
	b.SetIndex(coll.ID, store.IDIndexID, id, 0, id)
	b.AddStats(coll.ID, 0, 1, int64(len(doc)))
	if err := b.Commit(true); err != nil {
		panic(err)
	}
	b.Close()

	got, err := db.GetDoc(coll.ID, 0, id, nil)
	fmt.Printf("%s %v\n", got, err)

	it, err := db.NewDocIter(coll.ID, 0, 0)
	if err != nil {
		panic(err)
	}
	for it.Next() {
		fmt.Printf("hash %d id %q\n", it.Hash(), it.ID())
	}
	if err := it.Close(); err != nil {
		panic(err)
	}
	docs, bytes := db.CollStats(coll.ID)
	fmt.Println(docs, bytes)
	// Output:
	// {...bson...} <nil>
	// hash 0 id "\x10id-1\x00"
	// 1 12
}
