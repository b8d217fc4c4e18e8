"""Stage 4, plan: bandwidth per pool and Reduction Server sizing."""
