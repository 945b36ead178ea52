// Package scrape reads a Prometheus metrics endpoint over HTTP, as
// Prometheus does, for tests: each sample's value by its name and labels
// as the text format writes them (`name{label="v"}`).
package scrape

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Get scrapes url and returns its samples.
func Get(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	return Parse(string(body))
}

// Parse reads the samples of the text exposition format.
func Parse(text string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("sample %q has no value", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("sample %q: %w", line, err)
		}
		out[line[:i]] = v
	}
	return out, nil
}
