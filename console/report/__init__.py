"""The inspector's report: a site's week as a PDF a town can file."""
