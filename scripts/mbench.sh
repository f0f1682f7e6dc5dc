# mbench.sh, sourced by the benchmark scripts: where mbench comes from. mbench is the load
# harness they drive (`mbench run`, `mbench limit`, `mbench pebble`); it is not part of this
# repository. Set MBENCH to a built mbench binary, or MBENCH_SRC to a checkout of the harness
# (its ./cmd/mbench is built; a relative path is relative to the repository's root).

# build_mbench DEST: puts an mbench binary at DEST (an absolute path).
build_mbench() {
	if [ -n "${MBENCH:-}" ]; then
		cp "$MBENCH" "$1"
		return
	fi
	if [ -z "${MBENCH_SRC:-}" ]; then
		echo "set MBENCH_SRC to a checkout of the mbench harness, or MBENCH to a built mbench" >&2
		exit 1
	fi
	(cd "$MBENCH_SRC" && go build -o "$1" ./cmd/mbench)
}
