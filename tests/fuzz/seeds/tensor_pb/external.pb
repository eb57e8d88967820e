Bwj
locationweights.binp