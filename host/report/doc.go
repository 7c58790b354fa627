// Package report is what prints a run of genload: the markdown table of its cells (the
// default narrow one within 120 columns, and the wide one: [Table], [WriteTable]), its columns,
// which the CSV shares ([CSVHeader], [WriteCSV]; [Finish] ends a run's files with it), the
// legend of the columns ([Legends]), the warnings grouped by kind ([GroupWarnings]), the notes
// on prompts already cached ([CacheNotes]) and the prose and table helpers other commands
// print with ([Prose], [MarkdownTable], [Ms]). It reads the records of package results and
// computes no statistic across runs: that is package compare.
package report
