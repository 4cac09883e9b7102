package validation

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// Bounds of spec.backup.keep and of the schedule's text.
const (
	MinKeep           = 1
	MaxKeep           = 100
	maxScheduleLength = 256
	maxTimeZoneLength = 256
)

// cronParser reads the standard 5-field cron syntax and the @hourly-style
// descriptors, as a CronJob's schedule does; seconds are not supported.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a backup schedule in a time zone ("" is UTC). It is
// the one parser the API and the controller share, so a schedule the API
// accepted is one the controller can run.
func ParseSchedule(schedule string, timeZone *string) (cron.Schedule, error) {
	// A time zone belongs in timeZone: robfig/cron would also read a
	// "TZ=" or "CRON_TZ=" prefix, which would silently override it.
	if strings.Contains(schedule, "TZ") {
		return nil, fmt.Errorf("must not name a time zone; use spec.backup.timeZone")
	}
	if strings.HasPrefix(schedule, "@every") {
		return nil, fmt.Errorf("@every is not supported; use a 5-field cron expression")
	}
	sched, err := cronParser.Parse(schedule)
	if err != nil {
		return nil, err
	}
	if timeZone == nil || *timeZone == "" {
		// UTC, as documented: robfig/cron would use the process's zone.
		if spec, ok := sched.(*cron.SpecSchedule); ok {
			spec.Location = time.UTC
		}
		return sched, nil
	}
	loc, err := time.LoadLocation(*timeZone)
	if err != nil {
		return nil, &TimeZoneError{Zone: *timeZone, Err: err}
	}
	if spec, ok := sched.(*cron.SpecSchedule); ok {
		spec.Location = loc
	}
	return sched, nil
}

// TimeZoneError says a schedule's time zone cannot be loaded: a stored zone
// the server can no longer load where it runs stays accepted (it ratchets),
// so the controller meets it.
type TimeZoneError struct {
	Zone string
	Err  error
}

func (e *TimeZoneError) Error() string {
	return fmt.Sprintf("spec.backup.timeZone %q cannot be loaded: %v", e.Zone, e.Err)
}

func (e *TimeZoneError) Unwrap() error { return e.Err }

// validateSchedule checks spec.backup's schedule, time zone and keep; old
// is the stored spec.backup on update (nil on create). A stored schedule or
// time zone an update leaves as it is stays accepted even if a rule added
// since, or the zones the server can load where it runs now, would refuse
// it: otherwise no update of the store could pass, the removal of its
// finalizer neither.
func validateSchedule(b, old *kvstore.BackupSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if b.Keep != nil && (*b.Keep < MinKeep || *b.Keep > MaxKeep) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("keep"), *b.Keep, fmt.Sprintf("must be between %d and %d, inclusive", MinKeep, MaxKeep)))
	}
	scheduleUnchanged := old != nil && old.Schedule == b.Schedule
	if tz := b.TimeZone; tz != nil {
		tzPath := fldPath.Child("timeZone")
		switch _, err := time.LoadLocation(*tz); {
		case old != nil && ptr.Equal(old.TimeZone, tz):
		case len(*tz) > maxTimeZoneLength:
			allErrs = append(allErrs, field.TooLong(tzPath, *tz, maxTimeZoneLength))
		case *tz == "" || strings.EqualFold(*tz, "Local") || hostZoneFile(*tz):
			allErrs = append(allErrs, field.Invalid(tzPath, *tz, "must be an IANA time zone name such as \"Europe/Berlin\" or \"UTC\""))
		case err != nil:
			allErrs = append(allErrs, field.Invalid(tzPath, *tz, "unknown time zone: "+err.Error()))
		}
		if b.Schedule == "" {
			allErrs = append(allErrs, field.Invalid(tzPath, *tz, "may only be set with spec.backup.schedule"))
		}
	}
	if b.Schedule == "" {
		return allErrs
	}
	schedPath := fldPath.Child("schedule")
	if len(b.Schedule) > maxScheduleLength {
		return append(allErrs, field.TooLong(schedPath, b.Schedule, maxScheduleLength))
	}
	if !scheduleUnchanged && !cronText(b.Schedule) {
		return append(allErrs, field.Invalid(schedPath, b.Schedule, "must consist of printable ASCII characters, its fields separated by spaces or tabs"))
	}
	sched, err := ParseSchedule(b.Schedule, nil)
	switch {
	case err != nil:
		allErrs = append(allErrs, field.Invalid(schedPath, b.Schedule, "must be a 5-field cron expression (minute hour day-of-month month day-of-week): "+err.Error()))
	case !scheduleUnchanged && sched.Next(time.Now()).IsZero():
		// robfig/cron looks five years ahead; a date that never comes
		// (30 February) would silently never back up.
		allErrs = append(allErrs, field.Invalid(schedPath, b.Schedule, "matches no time in the next five years (a date such as 30 February never comes)"))
	}
	return allErrs
}

// hostZoneFile says tz names one of the host's zone files that is no IANA
// zone: "localtime" is the server's own zone (as "Local" is), posix/ and
// right/ are Debian's copies of the database; or a path to a zone file
// ("./UTC", "Europe//Berlin") rather than its name. time.LoadLocation reads
// the host's files before the server's embedded database, which has none
// of them, so a server on another host or image would refuse the name.
func hostZoneFile(tz string) bool {
	return tz == "localtime" || tz == "posixrules" || strings.HasPrefix(tz, "posix/") || strings.HasPrefix(tz, "right/") ||
		tz != path.Clean(tz)
}

// cronText says s holds only what a cron expression is written with:
// printable ASCII, spaces and tabs. The parser splits fields at any Unicode
// space (vertical tab, form feed, U+0085, U+00A0, ...), which YAML output
// would show as a plain space or not at all, so a schedule read back and
// applied again would no longer be the stored text.
func cronText(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool {
		return r != '\t' && (r < ' ' || r > '~')
	})
}

// validateBootstrap checks spec.bootstrap; oldSpec is nil on create. The
// bootstrap runs once, right after the store is created, so it can only be
// given at create and never changes.
func validateBootstrap(spec, oldSpec *kvstore.KeyValueStoreSpec, fldPath *field.Path) field.ErrorList {
	b := spec.Bootstrap
	if oldSpec != nil {
		if !bootstrapEqual(b, oldSpec.Bootstrap) {
			return field.ErrorList{field.Invalid(fldPath, b, "field is immutable: a bootstrap is given when the store is created and never changes")}
		}
		return nil
	}
	if b == nil {
		return nil
	}
	allErrs := validateImage(b.Image, fldPath.Child("image"))
	allErrs = append(allErrs, validateBackupCommand(b.Command, false, fldPath.Child("command"))...)
	if b.FromBackup != "" {
		for _, msg := range ValidateBackupName(b.FromBackup, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("fromBackup"), b.FromBackup, msg))
		}
	}
	if b.ActiveDeadlineSeconds != nil && *b.ActiveDeadlineSeconds <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), *b.ActiveDeadlineSeconds, "must be greater than zero"))
	}
	allErrs = append(allErrs, validateResources(b.Resources, fldPath.Child("resources"))...)
	return append(allErrs, validateJobAccess(b.ServiceAccountName, b.EnvFrom, fldPath)...)
}

func bootstrapEqual(a, b *kvstore.BootstrapSpec) bool {
	return Semantic.DeepEqual(a, b)
}
