package main

import (
	"os"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// canvas is one SVG page that several plots draw into.
type canvas struct{ svg *vgsvg.Canvas }

func newCanvas(w, h vg.Length) canvas { return canvas{vgsvg.New(w, h)} }

// sub is the w x h area at (x, y) from the bottom left.
func (c canvas) sub(x, y, w, h vg.Length) draw.Canvas {
	dc := draw.New(c.svg)
	dc.Rectangle = vg.Rectangle{Min: vg.Point{X: x, Y: y}, Max: vg.Point{X: x + w, Y: y + h}}
	return dc
}

func (c canvas) save(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.svg.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
