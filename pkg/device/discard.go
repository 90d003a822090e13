package device

// discardChunks splits [off, off+n) into discard requests: shrunk inward to
// multiples of gran (at least 512, the kernel's minimum alignment) and no
// longer than max bytes each. The result is [][2]int64{start, length}.
func discardChunks(off, n, gran, max int64) [][2]int64 {
	if gran < 512 {
		gran = 512
	}
	start := (off + gran - 1) / gran * gran
	end := (off + n) / gran * gran
	if max < gran {
		max = gran
	}
	max = max / gran * gran
	var out [][2]int64
	for start < end {
		l := min(end-start, max)
		out = append(out, [2]int64{start, l})
		start += l
	}
	return out
}
