package accuracy

import (
	"fmt"
	"math/rand/v2"
)

// Place is where a block runs.
type Place int

const (
	// InMain: in the main thread, in sequence with the others.
	InMain Place = iota
	// InThread: in a thread of its own. The dominant block's is joined at
	// once; a minor's runs beside the rest and is joined at the end.
	InThread
	// InChild: in a child process forked for it, waited for like a thread.
	InChild
)

func (p Place) String() string {
	return [...]string{"main thread", "thread", "child process"}[p]
}

// Block is one block of a program.
type Block struct {
	Name     string // its function in the program: b0 (the dominant), b1...
	Kind     *Kind
	Seconds  float64 // how long it is built to take
	Dominant bool
	Place    Place
	After    bool // a minor in the main thread: after the dominant block, not before
	Variant  int  // index in Kind.Variants
	// ReadOffset is where in Env.ReadFile the bytes a reading block reads
	// begin: each reading block has a range of its own, so that none finds
	// another's pages in the cache.
	ReadOffset int64
}

// VariantName is the name of the block's way of being written.
func (b *Block) VariantName() string {
	if len(b.Kind.Variants) == 0 {
		return ""
	}
	return b.Kind.Variants[b.Variant]
}

// Describe is the block in a few words: "disk-read (mmap), 1.230 s, in a
// thread, waited for".
func (b *Block) Describe() string {
	s := b.Kind.Name
	if v := b.VariantName(); v != "" {
		s += " (" + v + ")"
	}
	return fmt.Sprintf("%s, %.3f s, %s", s, b.Seconds, b.where())
}

func (b *Block) where() string {
	switch {
	case b.Dominant && b.Place == InMain:
		return "in the main thread"
	case b.Dominant:
		return "in a " + b.Place.String() + ", waited for"
	case b.Place == InMain && b.After:
		return "in the main thread, after the dominant block"
	case b.Place == InMain:
		return "in the main thread, before the dominant block"
	}
	return "in a " + b.Place.String() + " beside the rest"
}

// Program is a program generated from a seed: its dominant block first.
type Program struct {
	Seed   uint64
	Blocks []*Block
}

// Dominant is the block that takes most of the wall time.
func (p *Program) Dominant() *Block { return p.Blocks[0] }

// Minors are the other blocks.
func (p *Program) Minors() []*Block { return p.Blocks[1:] }

// Expected is the verdict reason whyslow must give.
func (p *Program) Expected() string { return p.Dominant().Kind.Reason }

// SmallDirty says whether the program runs under small dirty limits: only
// when its dominant block is to be throttled by them. Under them every
// buffered write of the others would be throttled too, and a block's
// seconds would no longer be what it was built for.
func (p *Program) SmallDirty() bool { return p.Dominant().Kind == kindDirtyThrottle }

// The shape of every program.
const (
	dominantMin, dominantSpan = 1.0, 0.5 // the dominant block's seconds: 1.0 to 1.5
	minorsMax                 = 3
	// A minor block is 4% to 10% of the dominant: at most 15% with the
	// cost of an interpreter's start in an exec'd child, a fork, a connect,
	// or the rest of a quota's period.
	minorMin, minorSpan = 0.04, 0.06
)

// Generate composes the program of a seed: the dominant kind is
// Kinds[seed mod len(Kinds)], everything else (its seconds and place, the
// minors' number, kinds, seconds and places, each block's variant) comes
// from a generator seeded with it, so the seed alone makes the program.
func Generate(seed uint64, env *Env) *Program {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	p := &Program{Seed: seed}
	dom := &Block{
		Name:     "b0",
		Kind:     Kinds[seed%uint64(len(Kinds))],
		Seconds:  round3(dominantMin + dominantSpan*rng.Float64()),
		Dominant: true,
		Place:    Place(rng.IntN(3)),
	}
	p.Blocks = append(p.Blocks, dom)
	for i, n := 1, 1+rng.IntN(minorsMax); i <= n; i++ {
		k := Kinds[rng.IntN(len(Kinds))]
		for !p.admits(k) {
			k = Kinds[rng.IntN(len(Kinds))]
		}
		b := &Block{
			Name:    fmt.Sprintf("b%d", i),
			Kind:    k,
			Seconds: round3(dom.Seconds * (minorMin + minorSpan*rng.Float64())),
		}
		switch rng.IntN(4) {
		case 0:
			b.Place = InMain
		case 1:
			b.Place, b.After = InMain, true
		case 2:
			b.Place = InThread
		case 3:
			b.Place = InChild
		}
		if sharesDisk(dom.Kind, k) {
			// Before the dominant block, not beside it or after it, when
			// the dominant's I/O would slow it (its writeback still going).
			b.Place, b.After = InMain, false
		}
		p.Blocks = append(p.Blocks, b)
	}
	var offset int64
	for _, b := range p.Blocks {
		if len(b.Kind.Variants) > 0 {
			b.Variant = rng.IntN(len(b.Kind.Variants))
		}
		if b.Kind.reads() {
			b.ReadOffset = offset
			offset += roundUp(readBytes(b, env), MiB) + MiB // a gap readahead does not cross
		}
	}
	if offset > env.ReadSize {
		panic(fmt.Sprintf("seed %d reads %d bytes of a %d-byte file", seed, offset, env.ReadSize))
	}
	return p
}

// admits says whether a minor of kind k may join the program. No memory
// block: before its reclaim waits for the disk, the child fills the
// cgroup's limit and reclaim starts writeback, some 0.15 s whatever its
// size, more than a minor's share of the dominant block.
func (p *Program) admits(k *Kind) bool { return k != kindMemory }

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }
