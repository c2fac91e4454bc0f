package exporter

import "sort"

// Other is the label of everything outside the top groups (or devices).
const Other = "other"

// labels bounds a label's values: at most n keys get a value of their own,
// the rest are summed under Other. A key keeps its label while it stays
// active, so counters stay monotonic; a busier newcomer takes the place of
// the quietest labelled key once that one has had its label a while (its
// series then ends, as a process's does when it exits).
type labels struct {
	n int
	// score is a decaying measure of each key's recent activity.
	score   map[string]float64
	labeled map[string]int // key -> frames since it got its label
	// maxTracked bounds score: the quietest unlabelled keys are forgotten.
	maxTracked int
}

const (
	decay = 0.9 // per frame: about ten frames of memory
	// minFrames is how long a label is kept before a busier key can take it.
	minFrames = 60
	// takeOver: a newcomer must be this many times busier than the quietest.
	takeOver = 2.0
)

func newLabels(n int) *labels {
	return &labels{n: n, score: map[string]float64{}, labeled: map[string]int{}, maxTracked: 4 * max(n, 256)}
}

// update takes one frame's activity per key and returns the keys whose
// labels were taken away (their series must go).
func (l *labels) update(activity map[string]float64) (dropped []string) {
	for k := range l.score {
		l.score[k] *= decay
	}
	for k, a := range activity {
		l.score[k] += a
	}
	for k := range l.labeled {
		l.labeled[k]++
	}
	// Once every label is taken, only a key that beats the quietest label
	// can take one, and the bar only rises as keys take over: the others
	// are not sorted. Under process churn they are thousands of names each
	// frame (a sort of them all was most of the exporter's CPU).
	bar := 0.0
	if len(l.labeled) >= l.n {
		q, ok := l.quietest()
		if !ok {
			l.forgetQuiet()
			return nil
		}
		bar = takeOver * l.score[q]
	}
	candidates := make([]string, 0, 16)
	for k, s := range l.score {
		if _, ok := l.labeled[k]; !ok && s > 0 && s > bar {
			candidates = append(candidates, k)
		}
	}
	sort.Slice(candidates, func(i, j int) bool {
		if l.score[candidates[i]] != l.score[candidates[j]] {
			return l.score[candidates[i]] > l.score[candidates[j]]
		}
		return candidates[i] < candidates[j]
	})
	for _, c := range candidates {
		if len(l.labeled) < l.n {
			l.labeled[c] = 0
			continue
		}
		q, ok := l.quietest()
		if !ok || l.score[c] <= takeOver*l.score[q] {
			break // candidates are sorted: no later one qualifies either
		}
		delete(l.labeled, q)
		dropped = append(dropped, q)
		l.labeled[c] = 0
	}
	l.forgetQuiet()
	return dropped
}

// quietest is the labelled key with the lowest score among those labelled
// long enough to lose their label.
func (l *labels) quietest() (string, bool) {
	best, found := "", false
	for k, age := range l.labeled {
		if age < minFrames {
			continue
		}
		if !found || l.score[k] < l.score[best] || (l.score[k] == l.score[best] && k < best) {
			best, found = k, true
		}
	}
	return best, found
}

func (l *labels) forgetQuiet() {
	if len(l.score) <= l.maxTracked {
		return
	}
	keys := make([]string, 0, len(l.score))
	for k := range l.score {
		if _, ok := l.labeled[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return l.score[keys[i]] < l.score[keys[j]] })
	// down to three quarters of the bound, so the sort is not paid every frame
	for _, k := range keys[:max(0, min(len(keys), len(l.score)-l.maxTracked*3/4))] {
		delete(l.score, k)
	}
}

// of is the label value for a key: itself if labelled, else Other.
func (l *labels) of(key string) string {
	if _, ok := l.labeled[key]; ok {
		return key
	}
	return Other
}
