package raftlog

import (
	"encoding/binary"
	"fmt"
)

// The key prefix of every group, and the kinds of key a group has.
const (
	prefixGroup byte = 'g'

	kindConf      byte = 'c' // the current ConfState
	kindEntry     byte = 'e' // one entry, followed by its index
	kindHard      byte = 'h' // the HardState
	kindSnapConf  byte = 's' // the ConfState at the truncated index
	kindTruncated byte = 't' // the truncated index and term

	groupKeyLen = 1 + 8         // prefixGroup | group
	entryKeyLen = 1 + 8 + 1 + 8 // prefixGroup | group | kindEntry | index
)

// groupStart is the first key a group may have: its prefix.
func groupStart(group uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixGroup}, group)
}

// groupEnd is the exclusive upper bound of a group's keys: every kind byte is below 0xff.
func groupEnd(group uint64) []byte {
	return append(groupStart(group), 0xff)
}

// stateKey is the key of one of a group's single-key kinds (conf, hard, snapshot conf,
// truncated).
func stateKey(group uint64, kind byte) []byte {
	return append(groupStart(group), kind)
}

// entryKey is the key of the entry at index in group.
func entryKey(group, index uint64) []byte {
	k := make([]byte, 0, entryKeyLen)
	k = append(k, prefixGroup)
	k = binary.BigEndian.AppendUint64(k, group)
	k = append(k, kindEntry)
	return binary.BigEndian.AppendUint64(k, index)
}

// entriesEnd is the exclusive upper bound of a group's entry keys.
func entriesEnd(group uint64) []byte {
	return append(groupStart(group), kindEntry+1)
}

// parseGroup returns the group of a key of the layout.
func parseGroup(key []byte) (uint64, error) {
	if len(key) < groupKeyLen || key[0] != prefixGroup {
		return 0, fmt.Errorf("raftlog: key %x is not a group's", key)
	}
	return binary.BigEndian.Uint64(key[1:groupKeyLen]), nil
}

// parseEntryIndex returns the index of an entry key.
func parseEntryIndex(key []byte) (uint64, error) {
	if len(key) != entryKeyLen || key[0] != prefixGroup || key[groupKeyLen] != kindEntry {
		return 0, fmt.Errorf("raftlog: key %x is not an entry's", key)
	}
	return binary.BigEndian.Uint64(key[groupKeyLen+1:]), nil
}

// encodeTruncated encodes a truncated state.
func encodeTruncated(index, term uint64) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), index)
	return binary.BigEndian.AppendUint64(v, term)
}

// decodeTruncated decodes a truncated state.
func decodeTruncated(v []byte) (index, term uint64, err error) {
	if len(v) != 16 {
		return 0, 0, fmt.Errorf("raftlog: truncated state of %d bytes, want 16", len(v))
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), nil
}
