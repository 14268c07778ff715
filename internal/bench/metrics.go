package bench

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// samples are the values of a Prometheus text exposition, by series (`name{labels}` as written).
type samples map[string]float64

// parseSamples reads the Prometheus text format: comments are skipped, every other line is a
// series and its value (timestamps are not used by controller-runtime).
func parseSamples(r io.Reader) (samples, error) {
	out := samples{}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for s.Scan() {
		line := s.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, s.Err()
}

// sum adds the series of metric name whose labels include every one of labels (`key="value"`).
func (m samples) sum(name string, labels ...string) float64 {
	var total float64
	for _, v := range m.matching(name, labels) {
		total += v
	}
	return total
}

// matching are the series of metric name whose labels include every one of labels, by their
// labels (the part between the braces).
func (m samples) matching(name string, labels []string) map[string]float64 {
	out := map[string]float64{}
	for series, v := range m {
		n, rest, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(rest, l)
		}
		if ok {
			out[rest] = v
		}
	}
	return out
}

// delta is after minus before, per series (a series missing before counts from zero).
func (m samples) delta(before samples) samples {
	out := samples{}
	for k, v := range m {
		out[k] = v - before[k]
	}
	return out
}
