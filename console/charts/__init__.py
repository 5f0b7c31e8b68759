"""The chart library: plots of a site's readings as SVG and PNG, for the pages, the email and the report."""
