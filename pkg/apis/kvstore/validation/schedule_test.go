package validation

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

func withBackup(mutate func(*kvstore.BackupSpec)) func(*kvstore.KeyValueStore) {
	return func(k *kvstore.KeyValueStore) {
		k.Spec.Backup = &kvstore.BackupSpec{Image: "backup:1", Keep: ptr.To[int32](7)}
		mutate(k.Spec.Backup)
	}
}

func TestValidateSchedule(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*kvstore.KeyValueStore)
		want   []fieldErr
	}{
		{name: "every minute", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "* * * * *" })},
		{name: "nightly in a time zone", mutate: withBackup(func(b *kvstore.BackupSpec) {
			b.Schedule, b.TimeZone = "0 3 * * *", ptr.To("Europe/Berlin")
		})},
		{name: "descriptor", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "@daily" })},
		{name: "ranges and steps", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "*/15 8-18 * * MON-FRI" })},
		{name: "six fields (seconds)", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "0 * * * * *" }),
			want: expect(invalid("spec.backup.schedule"))},
		{name: "four fields", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "* * * *" }),
			want: expect(invalid("spec.backup.schedule"))},
		{name: "minute out of range", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "61 * * * *" }),
			want: expect(invalid("spec.backup.schedule"))},
		{name: "garbage", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "nightly" }),
			want: expect(invalid("spec.backup.schedule"))},
		{name: "@every", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "@every 1m" }),
			want: expect(invalid("spec.backup.schedule"))},
		{name: "time zone in the schedule", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "CRON_TZ=UTC 0 3 * * *" }),
			want: expect(invalid("spec.backup.schedule"))},
		{name: "tab as a separator", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "0\t3 * * *" })},
		{name: "vertical tab as a separator", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "0\v3 * * *" }),
			want: expect(invalid("spec.backup.schedule"))},
		{name: "form feed as a separator", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "0\f3 * * *" }),
			want: expect(invalid("spec.backup.schedule"))},
		{name: "next line (U+0085) as a separator", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "0\u00853 * * *" }),
			want: expect(invalid("spec.backup.schedule"))},
		{name: "no-break space as a separator", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "0\u00a03 * * *" }),
			want: expect(invalid("spec.backup.schedule"))},
		{name: "newline as a separator", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "0\n3 * * *" }),
			want: expect(invalid("spec.backup.schedule"))},
		{name: "schedule too long", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = strings.Repeat("1,", 200) + "1 * * * *" }),
			want: expect(tooLong("spec.backup.schedule"))},
		{name: "unknown time zone", mutate: withBackup(func(b *kvstore.BackupSpec) {
			b.Schedule, b.TimeZone = "0 3 * * *", ptr.To("Mars/Olympus")
		}), want: expect(invalid("spec.backup.timeZone"))},
		{name: "Local time zone", mutate: withBackup(func(b *kvstore.BackupSpec) {
			b.Schedule, b.TimeZone = "0 3 * * *", ptr.To("Local")
		}), want: expect(invalid("spec.backup.timeZone"))},
		// The host's own zone files that are no IANA zone: the server loads
		// the host's files before its embedded database, so another host
		// would refuse what this one stored ("localtime" is also Local).
		{name: "the host's localtime", mutate: withBackup(func(b *kvstore.BackupSpec) {
			b.Schedule, b.TimeZone = "0 3 * * *", ptr.To("localtime")
		}), want: expect(invalid("spec.backup.timeZone"))},
		{name: "a posix/ zone file", mutate: withBackup(func(b *kvstore.BackupSpec) {
			b.Schedule, b.TimeZone = "0 3 * * *", ptr.To("posix/Europe/Berlin")
		}), want: expect(invalid("spec.backup.timeZone"))},
		{name: "a right/ zone file", mutate: withBackup(func(b *kvstore.BackupSpec) {
			b.Schedule, b.TimeZone = "0 3 * * *", ptr.To("right/UTC")
		}), want: expect(invalid("spec.backup.timeZone"))},
		// A path the host's files resolve and the embedded database does
		// not have (found by review: "./localtime" is the server's zone).
		{name: "a zone written as a path", mutate: withBackup(func(b *kvstore.BackupSpec) {
			b.Schedule, b.TimeZone = "0 3 * * *", ptr.To("./localtime")
		}), want: expect(invalid("spec.backup.timeZone"))},
		{name: "a zone with an empty path segment", mutate: withBackup(func(b *kvstore.BackupSpec) {
			b.Schedule, b.TimeZone = "0 3 * * *", ptr.To("Europe//Berlin")
		}), want: expect(invalid("spec.backup.timeZone"))},
		{name: "time zone without schedule", mutate: withBackup(func(b *kvstore.BackupSpec) { b.TimeZone = ptr.To("UTC") }),
			want: expect(invalid("spec.backup.timeZone"))},
		{name: "a date that never comes", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "0 0 30 2 *" }),
			want: expect(invalid("spec.backup.schedule"))},
		{name: "29 February", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Schedule = "0 0 29 2 *" })},
		{name: "keep 0", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Keep = ptr.To[int32](0) }),
			want: expect(invalid("spec.backup.keep"))},
		{name: "keep 101", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Keep = ptr.To[int32](101) }),
			want: expect(invalid("spec.backup.keep"))},
		{name: "keep 100", mutate: withBackup(func(b *kvstore.BackupSpec) { b.Keep = ptr.To[int32](100) })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := validKVS()
			tc.mutate(k)
			assert.Equal(t, expect(tc.want...), summarize(ValidateKeyValueStore(k)))
		})
	}
}

// A schedule stored before a rule refused it stays accepted while an
// update leaves it as it is, so that the store can still be updated and
// released by its teardown; a changed schedule is checked.
func TestScheduleRulesRatchet(t *testing.T) {
	for name, tc := range map[string]struct{ stored, changed string }{
		"separators":         {stored: "0\u00853 * * *", changed: "0\u00854 * * *"},
		"a date never comes": {stored: "0 0 30 2 *", changed: "0 0 31 2 *"},
	} {
		t.Run(name, func(t *testing.T) {
			newObj, oldObj := updatable()
			withBackup(func(b *kvstore.BackupSpec) { b.Schedule = tc.stored })(oldObj)
			withBackup(func(b *kvstore.BackupSpec) { b.Schedule = tc.stored })(newObj)
			newObj.Spec.Replicas = ptr.To(*oldObj.Spec.Replicas + 1)
			assert.Empty(t, ValidateKeyValueStoreUpdate(newObj, oldObj), "an unchanged schedule is accepted")

			newObj.Spec.Backup.Schedule = tc.changed
			assert.Equal(t, expect(invalid("spec.backup.schedule")), summarize(ValidateKeyValueStoreUpdate(newObj, oldObj)))
		})
	}
}

// A stored time zone the server no longer accepts (one it cannot load
// where it runs now, or a name refused since) is accepted while an update
// leaves it as it is: before, every update of the store was refused,
// /scale too, and so was the teardown's removal of its finalizer, for ever.
// A changed zone is checked.
func TestTimeZoneRatchets(t *testing.T) {
	for _, stored := range []string{"Mars/Olympus", "posix/Europe/Berlin", "localtime"} {
		t.Run(stored, func(t *testing.T) {
			newObj, oldObj := updatable()
			zone := withBackup(func(b *kvstore.BackupSpec) { b.Schedule, b.TimeZone = "0 3 * * *", ptr.To(stored) })
			zone(oldObj)
			zone(newObj)
			newObj.Spec.Replicas = ptr.To(*oldObj.Spec.Replicas + 1)
			assert.Empty(t, ValidateKeyValueStoreUpdate(newObj, oldObj), "an unchanged time zone is accepted")

			deleting := oldObj.DeepCopy()
			deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			released := deleting.DeepCopy()
			released.Finalizers = nil
			assert.Empty(t, ValidateKeyValueStoreUpdate(released, deleting), "the teardown releases its finalizer")

			newObj.Spec.Backup.TimeZone = ptr.To("Mars/Phobos")
			assert.Equal(t, expect(invalid("spec.backup.timeZone")), summarize(ValidateKeyValueStoreUpdate(newObj, oldObj)))
		})
	}
}

func TestParseScheduleInTimeZone(t *testing.T) {
	sched, err := ParseSchedule("0 3 * * *", ptr.To("Asia/Tokyo"))
	require.NoError(t, err)
	from := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	// 03:00 in Tokyo (UTC+9) is 18:00 UTC the day before.
	assert.Equal(t, time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC), sched.Next(from).UTC())
}

func validBootstrap() *kvstore.BootstrapSpec {
	return &kvstore.BootstrapSpec{Image: "restore:1", Command: []string{"/restore"}, FromBackup: "nightly-1", ActiveDeadlineSeconds: ptr.To[int64](600)}
}

func TestValidateBootstrap(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*kvstore.BootstrapSpec)
		want   []fieldErr
	}{
		{name: "valid", mutate: func(*kvstore.BootstrapSpec) {}},
		{name: "no image", mutate: func(b *kvstore.BootstrapSpec) { b.Image = "" }, want: expect(required("spec.bootstrap.image"))},
		{name: "bad backup name", mutate: func(b *kvstore.BootstrapSpec) { b.FromBackup = "Not_A_Name" }, want: expect(invalid("spec.bootstrap.fromBackup"))},
		{name: "empty command entry", mutate: func(b *kvstore.BootstrapSpec) { b.Command = []string{""} }, want: expect(invalid("spec.bootstrap.command[0]"))},
		{name: "command entry with DEL", mutate: func(b *kvstore.BootstrapSpec) { b.Command = []string{"/restore", "\x7f"} }, want: expect(invalid("spec.bootstrap.command[1]"))},
		{name: "command too many", mutate: func(b *kvstore.BootstrapSpec) { b.Command = repeatedArgs(65, 1) }, want: expect(tooMany("spec.bootstrap.command"))},
		{name: "deadline 0", mutate: func(b *kvstore.BootstrapSpec) { b.ActiveDeadlineSeconds = ptr.To[int64](0) }, want: expect(invalid("spec.bootstrap.activeDeadlineSeconds"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := validKVS()
			k.Spec.Bootstrap = validBootstrap()
			tc.mutate(k.Spec.Bootstrap)
			assert.Equal(t, expect(tc.want...), summarize(ValidateKeyValueStore(k)))
		})
	}
}

func TestBootstrapIsImmutable(t *testing.T) {
	for name, mutate := range map[string]func(*kvstore.KeyValueStore){
		"added after create": func(k *kvstore.KeyValueStore) { k.Spec.Bootstrap = validBootstrap() },
		"fromBackup changed": func(k *kvstore.KeyValueStore) {
			k.Spec.Bootstrap = validBootstrap()
			k.Spec.Bootstrap.FromBackup = "other"
		},
		"removed": func(k *kvstore.KeyValueStore) { k.Spec.Bootstrap = nil },
	} {
		t.Run(name, func(t *testing.T) {
			newObj, oldObj := updatable()
			if name != "added after create" {
				oldObj.Spec.Bootstrap = validBootstrap()
				newObj.Spec.Bootstrap = validBootstrap()
			}
			mutate(newObj)
			assert.Equal(t, expect(invalid("spec.bootstrap")), summarize(ValidateKeyValueStoreUpdate(newObj, oldObj)))
		})
	}
	newObj, oldObj := updatable()
	oldObj.Spec.Bootstrap, newObj.Spec.Bootstrap = validBootstrap(), validBootstrap()
	assert.Empty(t, ValidateKeyValueStoreUpdate(newObj, oldObj), "an unchanged bootstrap is accepted")
}

// Without timeZone a schedule runs in UTC, as documented, whatever the
// process's local zone (robfig/cron would use time.Local, and the due slot,
// read back from UTC annotations, would disagree with the next one; found
// by review).
func TestScheduleDefaultsToUTC(t *testing.T) {
	local := time.Local
	time.Local = time.FixedZone("CET", 3600)
	t.Cleanup(func() { time.Local = local })
	sched, err := ParseSchedule("0 3 * * *", nil)
	require.NoError(t, err)
	next := sched.Next(time.Date(2026, 11, 30, 1, 30, 0, 0, time.UTC).In(time.Local))
	assert.Equal(t, time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), next.UTC())
}
