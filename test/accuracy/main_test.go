package accuracy

import (
	"flag"
	"testing"
	"time"

	"github.com/whyslow/whyslow/test/harness"
)

var bin string // where whyslow was built for this run

func TestMain(m *testing.M) { harness.Main(m, &bin) }

var (
	full = flag.Bool("accuracy.full", false,
		"run the full set (TestAccuracyFull, `make accuracy`) and write ACCURACY.md; also WHYSLOW_ACCURACY_FULL=1")
	fullCount  = flag.Int("accuracy.n", 300, "programs in the full set: seeds 1 to n")
	fullBudget = flag.Duration("accuracy.budget", 40*time.Minute, "the full set stops starting programs after this long, and says so")
	seedList   = flag.String("accuracy.seed", "", "the seeds TestAccuracyOne runs, comma-separated")
)
