package scan

import (
	"slices"
	"strings"
)

// Known is a set of internal IDs (a response's own: the request's, its id fields') that no
// response may show in any spelling of Table, wherever they are. Each ID is written in the forms
// of every entry (its decimal digits, also reversed and without the first two, its hex, also
// without the first two, octal, base 36, 32, 62 and 58, Crockford's base 32, its bytes in hex),
// and a form is found anywhere: inside any longer run of letters and digits (case folded, or as
// it is for base 62 and 58), inside decimal groups joined by separators and hex groups joined by
// `-`, `:`, `.`, `,` or spaces. The spellings without forms (floats, hex floats, base64 and page
// tokens) are read by the table's readers, taking the IDs of the set at any time, not only those
// of the detector's window; in a decoded payload, the ID's 8 bytes and varints at any offset.
// Unlike the detector, it has no rule on letters and digits: a form is one ID's, so it cannot be
// found by chance.
//
// The zero value is an empty set.
type Known struct {
	fold, exact formSet
	ids         []int64
	formed      int                  // ids[:formed] have their forms in fold and exact (forms)
	idSet       map[int64]struct{}   // the IDs as a set, once there are more than knownListed
	floats      map[float64]struct{} // and the floats nearest them
}

// knownListed is how many IDs or forms Known looks up in a list; past it, in a set.
const knownListed = 32

// formSet is a set of forms of one kind (case-folded or exact).
type formSet struct {
	list    []string            // every form, each once
	set     map[string]struct{} // the forms as a set, once there are more than knownListed
	lengths []int
}

func (f *formSet) has(s []byte) bool {
	if f.set != nil {
		_, ok := f.set[string(s)]
		return ok
	}
	for _, x := range f.list {
		if x == string(s) {
			return true
		}
	}
	return false
}

func (f *formSet) add(s string) {
	if f.has([]byte(s)) {
		return
	}
	f.list = append(f.list, s)
	switch {
	case f.set != nil:
		f.set[s] = struct{}{}
	case len(f.list) > knownListed:
		f.set = make(map[string]struct{}, 4*len(f.list))
		for _, x := range f.list {
			f.set[x] = struct{}{}
		}
	}
	if !slices.Contains(f.lengths, len(s)) {
		f.lengths = append(f.lengths, len(s))
	}
}

// in returns the offset of the first form inside run, or -1.
func (f *formSet) in(run []byte) int {
	if len(f.list) == 0 {
		return -1
	}
	for a := range run {
		for _, n := range f.lengths {
			if a+n <= len(run) && f.has(run[a:a+n]) {
				return a
			}
		}
	}
	return -1
}

// minForm is the shortest form Known keeps: shorter ones are too short to tell from any other
// number.
const minForm = 6

// Add adds an internal ID.
func (k *Known) Add(id int64) {
	if id <= 0 || k.hasID(id) {
		return
	}
	k.ids = append(k.ids, id)
	switch {
	case k.idSet != nil:
		k.idSet[id] = struct{}{}
		k.floats[float64(id)] = struct{}{}
	case len(k.ids) > knownListed:
		k.idSet = make(map[int64]struct{}, 2*len(k.ids))
		k.floats = make(map[float64]struct{}, 2*len(k.ids))
		for _, x := range k.ids {
			k.idSet[x] = struct{}{}
			k.floats[float64(x)] = struct{}{}
		}
	}
}

// forms writes the forms of the IDs added since the last call: only a response that has a plain
// value to check pays for them (a response of IDs alone, the common case, never does).
func (k *Known) forms() {
	for ; k.formed < len(k.ids); k.formed++ {
		k.addForms(k.ids[k.formed])
	}
}

// addForms adds an ID's forms. They are written into one buffer that becomes one string the
// forms slice; one that holds another of the same kind is found whenever that one is, so only
// the other is kept.
func (k *Known) addForms(id int64) {
	var buf [320]byte
	b := buf[:0]
	for _, e := range Table {
		if e.forms != nil {
			b = e.forms(b, id)
		}
	}
	all := string(b)
	var fold, exact []string
	var foldA, exactA [24]string
	fold, exact = foldA[:0], exactA[:0]
	for start, i := 0, 0; i < len(all); i++ {
		if c := all[i]; c == '\n' || c == '\t' {
			if f := all[start:i]; len(f) >= minForm {
				if c == '\t' {
					exact = append(exact, f)
				} else {
					fold = append(fold, f)
				}
			}
			start = i + 1
		}
	}
	for _, kind := range [2]struct {
		forms []string
		set   *formSet
	}{{fold, &k.fold}, {exact, &k.exact}} {
		for i, f := range kind.forms {
			inner := false
			for j, g := range kind.forms {
				if j != i && len(g) < len(f) && strings.Contains(f, g) {
					inner = true
					break
				}
			}
			if !inner {
				kind.set.add(f)
			}
		}
	}
}

func (k *Known) hasID(v int64) bool {
	if k.idSet != nil {
		_, ok := k.idSet[v]
		return ok
	}
	return slices.Contains(k.ids, v)
}

// hasFloat: f is the float nearest one of the IDs.
func (k *Known) hasFloat(f float64) bool {
	if f < 0 {
		f = -f
	}
	if k.floats != nil {
		_, ok := k.floats[f]
		return ok
	}
	for _, id := range k.ids {
		if float64(id) == f {
			return true
		}
	}
	return false
}

// Len is the number of IDs in the set.
func (k *Known) Len() int { return len(k.ids) }

// Find returns the offset in text (as it is, not its normal form) of the first ID of the set it
// shows, or -1.
func (k *Known) Find(text []byte) int {
	if k == nil || len(k.ids) == 0 {
		return -1
	}
	k.forms()
	r := reading{k: k}
	if k.readIn(&r, text, Depth) || !r.found {
		return -1
	}
	return r.at
}

// Contains tells whether text, or its normal form, shows an ID of the set.
func (k *Known) Contains(text []byte) bool {
	if k.Find(text) >= 0 {
		return true
	}
	n, changed := Normalize(text)
	return changed && k.Find(n) >= 0
}

// readIn looks for the set's IDs in text: their forms, then the readers of the spellings
// without forms. false: found (r.found, r.at).
func (k *Known) readIn(r *reading, text []byte, depth int) bool {
	var buf []byte
	ok := eachRun(text, isAlnum, func(i, j int) bool {
		if a := k.exact.in(text[i:j]); a >= 0 {
			return r.hit(i + a)
		}
		buf = buf[:0]
		for _, c := range text[i:j] {
			buf = append(buf, lower(c))
		}
		if a := k.fold.in(buf); a >= 0 {
			return r.hit(i + a)
		}
		return true
	})
	if !ok {
		return false
	}
	ok = eachDigitGroup(text, &r.digits, func(start, _ int, digits []byte) bool {
		return k.fold.in(digits) < 0 || r.hit(start)
	})
	if !ok {
		return false
	}
	// Hex digits joined by single joiners (a UUID, bytes).
	for i := 0; i < len(text); {
		if !isHex(text[i]) {
			i++
			continue
		}
		j, joined := i, false
		buf = buf[:0]
		for j < len(text) {
			if isHex(text[j]) {
				buf = append(buf, lower(text[j]))
				j++
				continue
			}
			if isByteJoiner(text[j]) {
				n := j + 1
				for n < len(text) && text[n] == ' ' {
					n++
				}
				if n < len(text) && isHex(text[n]) {
					j, joined = n, true
					continue
				}
			}
			break
		}
		if joined && k.fold.in(buf) >= 0 {
			return r.hit(i)
		}
		i = j
	}
	for _, e := range textReaders {
		if e.forms == nil {
			r.cur = e
			if !e.text(r, text, depth) {
				return false
			}
		}
	}
	return true
}
