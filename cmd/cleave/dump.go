package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/cleavedb/cleave/tools/dump"
)

// defaultURI is the server the client subcommands talk to without --uri.
const defaultURI = "mongodb://127.0.0.1:27017"

// archiveFlag is mongodump's --archive: bare it means stdout (stdin for a load), and
// --archive=FILE names a file. Like mongodump's, it takes no separate argument.
type archiveFlag struct{ path string }

func (a *archiveFlag) String() string   { return a.path }
func (a *archiveFlag) IsBoolFlag() bool { return true }

// Set records the file, "true" (the bare flag) meaning "-".
func (a *archiveFlag) Set(v string) error {
	if v == "true" {
		v = "-"
	}
	a.path = v
	return nil
}

// listFlag collects a repeatable flag's values (--nsInclude a --nsInclude b).
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

// Set appends one value.
func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// toolContext is the context of a client subcommand: cancelled by an interrupt.
func toolContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

// runDump is `cleave dump`: mongodump's layout from a running server (docs/tools.md).
func runDump(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cleave dump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o dump.Options
	var archive archiveFlag
	fs.StringVar(&o.URI, "uri", env("URI", defaultURI), "the server's connection string")
	fs.StringVar(&o.DB, "db", "", "dump one database (default: all but admin, config and local)")
	fs.StringVar(&o.Collection, "collection", "", "dump one collection of --db")
	fs.StringVar(&o.Query, "query", "", "dump the documents this Extended JSON filter matches (with --collection)")
	fs.StringVar(&o.Out, "out", "dump", "output directory")
	fs.Var(&archive, "archive", "write one archive: --archive=FILE, or bare for stdout")
	fs.BoolVar(&o.Gzip, "gzip", false, "gzip the files (or the archive)")
	fs.BoolVar(&o.Snapshot, "snapshot", false, "read every collection at one cluster time (a snapshot session; within the server's snapshot window)")
	if err := fs.Parse(args); err != nil {
		return exitParse(err)
	}
	if fs.NArg() > 0 {
		say(stderr, "cleave dump: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	o.Archive, o.Stdout, o.Log = archive.path, stdout, stderr
	ctx, cancel := toolContext()
	defer cancel()
	if err := dump.Dump(ctx, o); err != nil {
		say(stderr, "cleave dump: %v\n", err)
		return 1
	}
	return 0
}

// runLoad is `cleave load`, mongorestore's counterpart of runDump: it reads a mongodump
// directory or archive into a running server.
func runLoad(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cleave load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o dump.LoadOptions
	var archive archiveFlag
	var include, exclude, nsFrom, nsTo listFlag
	fs.StringVar(&o.URI, "uri", env("URI", defaultURI), "the server's connection string")
	fs.StringVar(&o.Dir, "dir", "", "the dump directory (or give it as the argument; default dump)")
	fs.StringVar(&o.DB, "db", "", "load only this database")
	fs.StringVar(&o.Collection, "collection", "", "load only this collection")
	fs.Var(&include, "nsInclude", "load the namespaces matching this pattern (db.*, *.users); repeatable")
	fs.Var(&exclude, "nsExclude", "skip the namespaces matching this pattern; repeatable")
	fs.Var(&nsFrom, "nsFrom", "rename: the namespaces matching this pattern ('*' and $var$) ...; repeatable, paired with --nsTo")
	fs.Var(&nsTo, "nsTo", "... are loaded as this pattern's ('*' and $var$ from --nsFrom's)")
	fs.Var(&archive, "archive", "read one archive: --archive=FILE, or bare for stdin")
	fs.Bool("gzip", false, "accepted for mongorestore's command lines: gzipped input is recognized by itself")
	fs.BoolVar(&o.Drop, "drop", false, "drop each collection before loading it")
	fs.BoolVar(&o.NoIndexRestore, "noIndexRestore", false, "do not build the dumped indexes")
	if err := fs.Parse(args); err != nil {
		return exitParse(err)
	}
	switch {
	case fs.NArg() > 1:
		say(stderr, "cleave load: one dump directory at most, got %q\n", fs.Args())
		return 2
	case fs.NArg() == 1:
		o.Dir = fs.Arg(0)
	}
	o.Archive, o.Filter, o.Stdin, o.Log = archive.path, dump.Filter{Include: include, Exclude: exclude}, os.Stdin, stderr
	o.Rename = dump.Rename{From: nsFrom, To: nsTo}
	ctx, cancel := toolContext()
	defer cancel()
	res, err := dump.Load(ctx, o)
	if err != nil {
		say(stderr, "cleave load: %v\n", err)
		return 1
	}
	say(stdout, "%d document(s) loaded successfully. %d document(s) failed to load.\n", res.Loaded, res.Failed)
	return 0
}
