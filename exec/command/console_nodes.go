package command

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cleavedb/cleave/console"
	"github.com/cleavedb/cleave/exec/catalog"
)

// Nodes implements console.Source: the nodes keeping copies of the cluster's shards, from
// the placement (and the raft groups' membership when shards are replicated).
func (s consoleSource) Nodes() []console.Node {
	m := s.e.Shards
	if m == nil || !m.Clustered() {
		return nil
	}
	byName := map[string]*console.Node{}
	for id := range s.e.Cat.Shards() {
		copies := m.ShardCopies(id)
		for _, c := range copies {
			n := byName[c.Node]
			if n == nil {
				n = &console.Node{Name: c.Node, Up: m.NodeUp(c.Node), Self: c.Node == m.NodeName()}
				byName[c.Node] = n
			}
			if n.Host == "" {
				n.Host = c.Host
			}
			n.Shards = append(n.Shards, console.NodeShard{Name: catalog.ShardName(id), Copies: len(copies), State: c.State})
		}
	}
	out := make([]console.Node, 0, len(byName))
	for _, n := range byName {
		out = append(out, *n)
	}
	slices.SortFunc(out, func(a, b console.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Ready implements console.Source: storage is open and, in cluster mode, this node is
// registered and every shard has a live node serving it.
func (s consoleSource) Ready() error {
	if s.e.Cat == nil {
		return errors.New("no storage is open")
	}
	c := s.e.Storage.Cluster
	if c == nil {
		return nil
	}
	if !c.NodeUp(c.NodeName()) {
		return fmt.Errorf("node %s has not joined the cluster", c.NodeName())
	}
	for id := range s.e.Cat.Shards() {
		node, _ := c.ShardHost(id)
		switch {
		case node == "":
			return fmt.Errorf("%s has no node serving it", catalog.ShardName(id))
		case !c.NodeUp(node):
			return fmt.Errorf("%s's node %s is down", catalog.ShardName(id), node)
		}
	}
	return nil
}
