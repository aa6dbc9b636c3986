package backup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
)

// ArchiveCoverage is the range a restore of the backup under backupPrefix
// can reach with the oplog archive under archivePrefix (Coverage of its
// manifest and the archive's keys), and the manifest.
func ArchiveCoverage(ctx context.Context, st ArchiveStore, backupPrefix, archivePrefix string, timeout time.Duration) (Range, *Manifest, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	m, err := ReadManifest(ctx, st, backupPrefix, timeout)
	if err != nil {
		return Range{}, nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	objs, err := st.List(cctx, strings.TrimSuffix(archivePrefix, "/")+"/")
	if err != nil {
		return Range{}, nil, fmt.Errorf("backup: list the oplog archive: %w", err)
	}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return Coverage(m, keys), m, nil
}

// RestoreTo restores the backup under backupPrefix into the replica set
// whose primary target is connected to, as Restore does (the data as of
// the backup's End), then replays the oplog archive's entries after End up
// to and including the one at at: the data is then as the source was at
// at. A point outside the range the backup and the archive cover
// (ArchiveCoverage) is refused (ErrOutsideRange, the range named) before
// anything is written. Result.End is the last entry applied.
func RestoreTo(ctx context.Context, target *driver.Client, st ArchiveStore, backupPrefix, archivePrefix string, at bson.Timestamp, opts RestoreOptions) (*Result, error) {
	opts.defaults()
	rng, m, err := ArchiveCoverage(ctx, st, backupPrefix, archivePrefix, opts.Timeout)
	if err != nil {
		return nil, err
	}
	if !rng.Contains(at) {
		return nil, fmt.Errorf("%w: ts(%d,%d) is not in %s", ErrOutsideRange, at.T, at.I, rng)
	}
	r := &restorer{c: target, store: st, opts: opts}
	res, err := r.restore(ctx, m)
	if err != nil {
		return nil, err
	}
	p := &replayer{r: r}
	err = r.archived(ctx, rng, at, func(e bson.Raw, pos Position) error {
		res.End = pos
		return p.add(ctx, e)
	})
	if err == nil {
		err = p.flush(ctx)
	}
	res.Replayed += p.n
	if err != nil {
		return nil, err
	}
	opts.Log.Info().Str("backup", backupPrefix).Int("collections", res.Collections).Int64("documents", res.Documents).
		Int("views", res.Views).Int("users", res.Users).Int("roles", res.Roles).Int64("replayed", res.Replayed).Str("end", res.End.String()).Msg("point-in-time restore finished")
	return res, nil
}

// TimestampAt is the point in time RestoreTo takes for the wall clock t:
// the timestamp of the last entry of the archive (or the backup's End)
// whose wall time, as the primary wrote it, is at or before t. The first
// entry after t is excluded, and so is everything after it. t before the
// backup's End or after the archive's last entry is refused
// (ErrOutsideRange): after it, writes the archive does not hold yet may
// have happened.
func TimestampAt(ctx context.Context, st ArchiveStore, backupPrefix, archivePrefix string, t time.Time, timeout time.Duration) (bson.Timestamp, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	rng, m, err := ArchiveCoverage(ctx, st, backupPrefix, archivePrefix, timeout)
	if err != nil {
		return bson.Timestamp{}, err
	}
	if t.Before(m.End.Wall) {
		return bson.Timestamp{}, fmt.Errorf("%w: %s is before the backup's end (%s); the range is %s", ErrOutsideRange,
			t.UTC().Format(time.RFC3339Nano), m.End.Wall.Format(time.RFC3339Nano), rng)
	}
	r := &restorer{store: st, opts: RestoreOptions{Timeout: timeout}}
	found, last := rng.From, m.End.Wall
	err = r.archived(ctx, rng, rng.To, func(_ bson.Raw, pos Position) error {
		if pos.Wall.After(t) {
			return errStop
		}
		found, last = pos.Timestamp(), pos.Wall
		return nil
	})
	switch {
	case errors.Is(err, errStop):
		return found, nil
	case err == nil:
		return bson.Timestamp{}, fmt.Errorf("%w: %s is after the archive's last entry (%s); the range is %s", ErrOutsideRange,
			t.UTC().Format(time.RFC3339Nano), last.Format(time.RFC3339Nano), rng)
	}
	return bson.Timestamp{}, err
}

// errStop ends a walk of the archive early.
var errStop = errors.New("stop")

// archived calls f with each entry of rng's chunks after rng.From, up to
// and including at, once each, in order.
func (r *restorer) archived(ctx context.Context, rng Range, at bson.Timestamp, f func(bson.Raw, Position) error) error {
	passed := rng.From
	for _, c := range rng.Chunks {
		entries, err := r.entries(ctx, c.Key)
		if err != nil {
			return err
		}
		for _, e := range entries {
			pos, err := entryPosition(e)
			if err != nil {
				return fmt.Errorf("%s: %w", c.Key, err)
			}
			ts := pos.Timestamp()
			if tsAfter(ts, at) {
				return nil
			}
			if !tsAfter(ts, passed) {
				continue
			}
			if err := f(e, pos); err != nil {
				return err
			}
			passed = ts
		}
		if tsAfter(c.Last, passed) {
			return fmt.Errorf("backup: oplog archive chunk %s ends at ts(%d,%d), its key says ts(%d,%d)", c.Key, passed.T, passed.I, c.Last.T, c.Last.I)
		}
	}
	return nil
}
