package auth

import (
	"reflect"
	"testing"
)

func TestPrivilegesMergeAndRevoke(t *testing.T) {
	onA := func(acts ...string) Privilege { return Privilege{DB: "a", Actions: acts} }
	cluster := func(acts ...string) Privilege { return Privilege{Cluster: true, Actions: acts} }
	cases := []struct {
		name string
		got  []Privilege
		want []Privilege
	}{
		{"MergeSameResource", MergePrivileges([]Privilege{onA("find"), cluster("inprog"), onA("insert", "find")}),
			[]Privilege{onA("find", "insert"), cluster("inprog")}},
		{"MergeDuplicates", MergePrivileges([]Privilege{onA("find"), onA("find")}), []Privilege{onA("find")}},
		{"MergeKeepsCollectionsApart", MergePrivileges([]Privilege{onA("find"), {DB: "a", Coll: "c", Actions: []string{"find"}}}),
			[]Privilege{onA("find"), {DB: "a", Coll: "c", Actions: []string{"find"}}}},
		{"RevokeSomeActions", RevokePrivileges([]Privilege{onA("find", "insert")}, []Privilege{onA("insert"), {DB: "b", Actions: []string{"find"}}}),
			[]Privilege{onA("find")}},
		{"RevokeLastActionDropsPrivilege", RevokePrivileges([]Privilege{onA("find"), cluster("inprog")}, []Privilege{onA("find", "remove")}),
			[]Privilege{cluster("inprog")}},
		{"RevokeOtherResourceNothing", RevokePrivileges([]Privilege{onA("find")}, []Privilege{cluster("find")}), []Privilege{onA("find")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Fatalf("got %+v, want %+v", tc.got, tc.want)
			}
		})
	}
}
