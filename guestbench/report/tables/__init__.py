"""One module per family of tables (the summary, the published tables, boot, disks and builds,
bonnie++, versions, efficiency, platform, a pool group, comparisons, history), each built
from analysis/'s typed results into report/model.py's Table."""
