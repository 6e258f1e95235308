"""The explain stage: why an RM fails a user. Per (pair, RM, strategy) what the RM did (`cells`), per pair what
it was shown (`pairs`), per RM and strategy the error analysis (`analysis`): accuracy by the answers' length
relation (a length bias with its CI), by category, by profile length, by position, and the gain from the
profile per pair. The report's pair explorer (report/pairs.html) and `prbench explain` read its outputs."""
