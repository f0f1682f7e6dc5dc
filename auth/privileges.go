package auth

import "slices"

// sameResource reports whether a and b name the same resource.
func sameResource(a, b Privilege) bool {
	return a.Cluster == b.Cluster && a.AnyResource == b.AnyResource && a.DB == b.DB && a.Coll == b.Coll
}

// MergePrivileges returns ps with the privileges on one resource merged into one, as
// MongoDB keeps a role's privileges (Privilege::addPrivilegesToPrivilegeVector): the first
// privilege on a resource keeps its place, later ones add the actions it lacks, and each
// privilege's actions are sorted and unique.
//
//	[{db: a, find}, {cluster, inprog}, {db: a, insert, find}] → [{db: a, find, insert}, {cluster, inprog}]
func MergePrivileges(ps []Privilege) []Privilege {
	out := make([]Privilege, 0, len(ps))
	for _, p := range ps {
		i := slices.IndexFunc(out, func(q Privilege) bool { return sameResource(p, q) })
		if i < 0 {
			p.Actions = slices.Clone(p.Actions)
			out = append(out, p)
			i = len(out) - 1
		} else {
			out[i].Actions = append(out[i].Actions, p.Actions...)
		}
		slices.Sort(out[i].Actions)
		out[i].Actions = slices.Compact(out[i].Actions)
	}
	return out
}

// RevokePrivileges returns have without the actions rm names on the same resources, as
// MongoDB's revokePrivilegesFromRole removes them: a privilege left with no action goes;
// actions and resources have does not hold are ignored.
//
//	have [{db: a, find, insert}], rm [{db: a, insert}, {db: b, find}] → [{db: a, find}]
func RevokePrivileges(have, rm []Privilege) []Privilege {
	out := make([]Privilege, 0, len(have))
	for _, p := range have {
		p.Actions = slices.Clone(p.Actions)
		for _, r := range rm {
			if sameResource(p, r) {
				p.Actions = slices.DeleteFunc(p.Actions, func(a string) bool { return slices.Contains(r.Actions, a) })
			}
		}
		if len(p.Actions) > 0 {
			out = append(out, p)
		}
	}
	return out
}
