package command_test

import (
	"slices"
	"testing"

	"github.com/cleavedb/cleave/exec/command"
)

// kitTable returns a table of three commands, two of them with aliases, and the entries.
func kitTable() (*command.Table, []*command.Command) {
	cmds := []*command.Command{
		{Name: "findAndModify", Aliases: []string{"findandmodify"}, Props: command.RetryableWrite | command.WriteConcern | command.InTxn},
		{Name: "collStats", Aliases: []string{"collstats", "collStatsAlias"}, Props: command.Explainable},
		{Name: "ping", Props: command.Legacy | command.APIV1},
	}
	t := command.NewTable()
	for _, c := range cmds {
		t.Add(c)
	}
	return t, cmds
}

// TestTableAddDuplicatePanics checks that registering a spelling twice, as a name or as an
// alias, is refused with a panic naming the spelling, and that a fresh spelling is not.
func TestTableAddDuplicatePanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *command.Command
		want string // the panic's value; "" for none
	}{
		{"NameAgainAsName", &command.Command{Name: "ping"}, "command registered twice: ping"},
		{"AliasAgainAsName", &command.Command{Name: "findandmodify"}, "command registered twice: findandmodify"},
		{"NameAgainAsAlias", &command.Command{Name: "other", Aliases: []string{"collStats"}}, "command registered twice: collStats"},
		{"AliasWithinOneEntry", &command.Command{Name: "x", Aliases: []string{"y", "y"}}, "command registered twice: y"},
		{"FreshSpellings", &command.Command{Name: "hello", Aliases: []string{"isMaster", "ismaster"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table, _ := kitTable()
			var got any
			func() {
				defer func() { got = recover() }()
				table.Add(tc.c)
			}()
			if tc.want == "" {
				if got != nil {
					t.Fatalf("Add panicked: %v", got)
				}
				return
			}
			if s, _ := got.(string); s != tc.want {
				t.Fatalf("Add panicked with %v, want %q", got, tc.want)
			}
		})
	}
}

// TestTableLookup checks that Lookup finds an entry by its name and by each alias, returns
// the spelling asked for, as a string the table holds, without allocating, and nothing for
// an unknown spelling; Get agrees.
func TestTableLookup(t *testing.T) {
	table, cmds := kitTable()
	for _, c := range cmds {
		for _, spelling := range append([]string{c.Name}, c.Aliases...) {
			got, name := table.Lookup([]byte(spelling))
			if got != c || name != spelling {
				t.Errorf("Lookup(%q) = %v, %q; want entry %q, %q", spelling, got, name, c.Name, spelling)
			}
			if table.Get(spelling) != c {
				t.Errorf("Get(%q) is not entry %q", spelling, c.Name)
			}
		}
	}
	for _, unknown := range []string{"", "Ping", "findAndmodify", "collStats ", "nope"} {
		if got, name := table.Lookup([]byte(unknown)); got != nil || name != "" {
			t.Errorf("Lookup(%q) = %v, %q; want nil, \"\"", unknown, got, name)
		}
		if table.Get(unknown) != nil {
			t.Errorf("Get(%q) found an entry", unknown)
		}
	}
	buf := []byte("collstats")
	if n := testing.AllocsPerRun(100, func() { table.Lookup(buf) }); n != 0 {
		t.Errorf("Lookup of an alias allocates %v times", n)
	}
}

// TestTableNames checks that Names lists every spelling, aliases included, once and sorted.
func TestTableNames(t *testing.T) {
	table, _ := kitTable()
	want := []string{"collStats", "collStatsAlias", "collstats", "findAndModify", "findandmodify", "ping"}
	if got := table.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %q, want %q", got, want)
	}
	if got := command.NewTable().Names(); len(got) != 0 {
		t.Fatalf("Names() of an empty table = %q", got)
	}
}

// TestCommandHas checks Has: a nil command has no property, a command has each property it
// declares alone and together, and not a set with one it lacks.
func TestCommandHas(t *testing.T) {
	var missing *command.Command
	c := &command.Command{Name: "insert", Props: command.RetryableWrite | command.WriteConcern | command.InTxn}
	for _, tc := range []struct {
		name string
		c    *command.Command
		p    command.Props
		want bool
	}{
		{"NilHasNothing", missing, command.InTxn, false},
		{"NilHasNotEvenTheEmptySet", missing, 0, false},
		{"EmptySet", c, 0, true},
		{"OneDeclared", c, command.WriteConcern, true},
		{"AllDeclared", c, command.RetryableWrite | command.WriteConcern | command.InTxn, true},
		{"TwoDeclared", c, command.RetryableWrite | command.InTxn, true},
		{"OneLacking", c, command.OpensCursor, false},
		{"DeclaredAndLacking", c, command.InTxn | command.Explainable, false},
		{"HighestBit", &command.Command{Props: command.APIV1}, command.APIV1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Has(tc.p); got != tc.want {
				t.Fatalf("Has(%b) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

// TestCountersCount checks that Count adds one to the opcounter named, and to no other.
func TestCountersCount(t *testing.T) {
	var c command.Counters
	counts := map[command.OpCounter]int64{command.OpCommand: 3, command.OpQuery: 1, command.OpInsert: 2, command.OpGetMore: 5}
	for op, n := range counts {
		for range n {
			c.Count(op)
		}
	}
	for op := command.OpCommand; op <= command.OpGetMore; op++ {
		if got := c.Ops[op].Load(); got != counts[op] {
			t.Errorf("Ops[%d] = %d, want %d", op, got, counts[op])
		}
	}
	if c.InsertedDocs.Load() != 0 || c.ReturnedDocs.Load() != 0 {
		t.Error("Count touched the document counters")
	}
}
